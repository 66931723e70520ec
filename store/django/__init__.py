"""The Django store: models, migrations and the ORM store serving PostgreSQL and SQLite."""
