"""BI tools on the published warehouse: Apache Superset, set up, served and filled with paperhouse's
dashboards by one command (`paperhouse superset`, `make superset`; docs/bi.md).

Superset runs in a virtualenv of its own (its pins clash with paperhouse's), from
``superset_assets/requirements.lock``; its config, metadata database and admin account live under
the warehouse's data folder (``data/superset/``). The dashboards are code: a YAML bundle in
``superset_assets/dashboards/``, imported over Superset's REST API with the warehouse registered
read-only. Nothing a run imports imports this package.
"""
