"""Helpers every stage may use and that know nothing of papers: NumPy/Polars array helpers
(``arrays``), worker processes tied to the run that started them (``workers``), whether a process
runs (``processes``) and the failpoints that prove a run crash safe (``faults``). Imports no other
paperhouse package."""
