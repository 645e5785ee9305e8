"""What the tests share: paths, fake servers, chart parsers, conversation generators and checks.

A test module imports helpers from here (``from support.paths import REPO``), never from
another test module and never from ``bench/``. ``tests/`` is on the import path
(``pythonpath`` in pyproject.toml), so ``support`` is this package in every test.
"""
