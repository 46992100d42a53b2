"""Stage 6, dashboard: the static HTML dashboard built from the Parquet export of the marts
(``site``, its templates in ``templates/``), with the Trends page's charts (``trend_charts``).

Hands on: ``data/dashboard/index.html`` and its pages.
"""
