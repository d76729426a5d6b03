"""The API as deployed: gunicorn processes, headers, throttles, database outages."""
