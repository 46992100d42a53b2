"""A dbt that is already warm: imported, with the project parsed, when a run's dbt step starts.

dagster-dbt's ``DbtCliResource`` runs each dbt command as a new ``dbt`` process, which imports
dbt and parses the project before its first model, and a run calls dbt twice. Here the
``dbt_executable`` it starts is ``paperhouse-dbt`` (``client``), which hands the command to a warm
dbt process (``server``) waiting on a Unix socket: started when the run began, it has imported dbt
and parsed the project while the Python steps ran. It runs the one command with dbt's
programmatic API (``dbtRunner``, given the parsed manifest), writing dbt's JSON log lines to the
client's own output, and ends as a `dbt` process ends, which closes the database; before it
starts the command, it starts the warm process for the next one. Everything on the Dagster side
is dagster-dbt's: the command line, the selection, the events it turns into materialisations and
checks. Without a warm process (``PAPERHOUSE_DBT_WORKER`` unset, or nothing listening) the client
runs the real ``dbt`` instead, so the result is the same (``worker``: the run's side).

Nothing here imports Dagster: the client starts once per command and the warm processes beside a
run on a 2-core machine, and none of them needs it.
"""

# The Unix socket of the run's warm dbt processes, set in the run's environment, which dagster-dbt
# passes on to the dbt processes it starts.
SOCKET_ENV = "PAPERHOUSE_DBT_WORKER"
