"""The job queue: the ``jobs`` table (claim, heartbeat, cancel, recovery), the worker that runs
each job in a child process, the supervisor that keeps ``serve``'s workers alive, what every child
does first, and one ETA for a job from its progress. It knows a kind of job only through the
registry the areas fill (``kinds``): what it runs, how it is stored, named, capped and timed.
"""
