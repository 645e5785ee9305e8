"""Ships the dashboard inside the package: everything else is in pyproject.toml.

``app.py``, ``app_server.py`` (its server, with the frame policy), ``pages/``,
``widgets/`` (the widgets the pages share) and ``.streamlit/config.toml`` stay at
the top of the checkout (where ``make run`` expects them); a built
wheel carries copies in ``contextfit/app/``, which ``contextfit dashboard``
runs when the package is installed rather than checked out.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
DASHBOARD = ["app.py", "app_server.py", "pages", "widgets", ".streamlit/config.toml"]


class BuildWithDashboard(build_py):
    def run(self) -> None:
        super().run()
        if self.editable_mode:  # an editable install runs the checkout's own app.py
            return
        target = Path(self.build_lib) / "contextfit" / "app"
        for name in DASHBOARD:
            source, destination = HERE / name, target / name
            destination.parent.mkdir(parents=True, exist_ok=True)
            if source.is_dir():
                shutil.copytree(source, destination, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                shutil.copy2(source, destination)


setup(cmdclass={"build_py": BuildWithDashboard})
