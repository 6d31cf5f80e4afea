"""The Airflow UI plugin: a "Broadcast jobs" page served by a FastAPI app inside the api-server."""
