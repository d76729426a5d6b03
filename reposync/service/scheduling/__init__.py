"""What runs when nobody asks: cron schedules, the periodic tick, the in-process executor
of ``reposync api``, and where a queued Run waits, in words."""
