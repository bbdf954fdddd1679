"""Runs: every launch's id, record (names only), masked log and run directory.

    paths     where everything lives (``$XDG_STATE_HOME/primus-runner``), run ids
    store     the SQLite (WAL) store of records: concurrent launches, crash-safe
    record    one run's record: names, paths and codes, never a value
    logdir    the run's masked, size-capped output log
    liveness  is the runner of a run (or a detached job's keeper) still alive (a lock it holds)
    outputs   tracker output paths resolved against the job's mounts
    cache     the per-host, per-image compiler/model cache mounted into every job
    recorder  the pipeline's hook: ``begin`` before the launch, ``end`` after it
    writer    the record's writes on a thread of their own, off the launch's critical path
    detached  a detached container's end kept in its run's record (``runs``, ``down``)
    reading   the store as the commands open it, a run's own masker
    commands  ``runs``, ``runs show``, ``runs gc`` and ``logs RUN|NAME|JOB``
"""
