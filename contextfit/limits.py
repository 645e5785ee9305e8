"""How much one input may hold: the importers' limits, in one place.

Every importer limit is refused with ``INVALID_CONVERSATION`` and a message
that says which limit and by how much, the names and macros with
``INVALID_SETTINGS``; docs/operations.md ("Limits") lists them. Measured on
this project's 2-core machine (``bench/hostile.py``): a 400,000-message
SillyTavern chat took 37 s and 0.9 GB to fit with the CLI, a World Info file
of 200,000 entries 6.5 s to load; at these limits the largest inputs take a
few seconds.

>>> MAX_FILE_BYTES // (1024 * 1024), MAX_MESSAGES, MAX_LOREBOOK_ENTRIES
(16, 100000, 20000)
"""

from __future__ import annotations

#: The largest file (or paste) the importers read, in bytes: checked before
#: anything is read or decoded. The dashboard's upload limit
#: (Streamlit ``server.maxUploadSize``, in MB) should equal it.
MAX_FILE_BYTES = 16 * 1024 * 1024

#: Messages in one imported conversation. A 100,000-message SillyTavern chat
#: (10 MB) fits under every strategy with the CLI in about 9 s and 0.3 GB here.
MAX_MESSAGES = 100_000

#: Entries in one World Info file or character book (about 0.7 s to read
#: 20,000; the largest public lorebooks hold a few thousand).
MAX_LOREBOOK_ENTRIES = 20_000

#: Chunks a PNG character card is walked through before giving up (a 16 MB
#: image in libpng's 8 KB data chunks has about 2,000). All compressed text
#: in one PNG may decompress to MAX_FILE_BYTES at most.
MAX_PNG_CHUNKS = 20_000

#: Conversations of one dataset that ``list_conversations`` imports and lists
#: (the dashboard's menu). A 15 MB JSON Lines file of 277,777 one-line records
#: took 47 s to list whole (its parse alone: 9 s), and no menu helps with that many.
MAX_LISTED_CONVERSATIONS = 1_000

#: Characters in a name that fills ``{{user}}`` or ``{{char}}`` (``user_name``,
#: ``char_name``, or a card's name): names are a few words; a 3,000-character
#: one copied into ten thousand macros made an 83 KB request peak at 1.7 GB.
MAX_NAME_CHARS = 256

#: Characters that filling in ``{{user}}`` and ``{{char}}`` may add to one
#: prompt, counted before anything is filled in (``contextfit/inputs/macros.py``).
#: Text of one long "word" costs tiktoken about 50 bytes a character, so this
#: adds at most about 50 MB to what the written text costs.
MAX_MACRO_GROWTH = 1_000_000
