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
checks. Without a warm process (no address file in the command's target folder, or nothing
listening) the client
runs the real ``dbt`` instead, so the result is the same (``worker``: the run's side).

Nothing here imports Dagster: the client starts once per command and the warm processes beside a
run on a 2-core machine, and none of them needs it.
"""

# Names the Unix socket of the run's warm dbt processes, in the target folder the run prepared them
# for: dagster-dbt hands each dbt process it starts that folder (DBT_TARGET_PATH), so the client
# finds the run's warm dbt there, and the run never writes its environment.
ADDRESS_FILE = ".paperhouse-dbt-worker"
