"""The job queue: the ``jobs`` table (claim, heartbeat, cancel, recovery), the worker that runs
each job in a child process, the supervisor that keeps ``serve``'s workers alive, what every child
does first, and the progress and ETA a job page shows.
"""
