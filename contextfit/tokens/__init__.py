"""Token counting: vocabularies, tokenizers and the engines that count with them."""
