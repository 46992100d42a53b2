"""The files a run needs besides code, found through ``importlib.resources`` (``paperhouse.settings``).

``dbt_project`` (the models, their tests and contracts) and ``seeds`` (the bundled lists) are the
checkout's top-level folders: links here in a checkout, copies in a built wheel (``pyproject.toml``
lists them as package data), so ``pip install .`` ships them and an editable install reads the
checkout's own.
"""
