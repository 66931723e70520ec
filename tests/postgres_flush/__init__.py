"""Django's PostgreSQL backend, but for how a test empties the database between cases (`ENGINE` of the store
suite's PostgreSQL alias: tests/store/django_support.py)."""
