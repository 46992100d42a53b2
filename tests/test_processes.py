"""``paperhouse.common.processes.running``: what the warm dbt processes and the Superset server's stop
wait on."""

import os
import subprocess
import sys
import time

from paperhouse.common.processes import running


def test_a_running_process_runs_and_one_that_ended_does_not_waited_for_or_not():
    assert running(os.getpid())
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    assert running(child.pid)
    child.stdin.close()  # it ends, and stays a zombie until waited for
    deadline = time.monotonic() + 60
    while running(child.pid) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not running(child.pid)
    child.wait()
    assert not running(child.pid)
