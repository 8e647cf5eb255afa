"""Schema migration in place: columns a newer version added to a table are added to existing databases.

``metadata.create_all`` creates missing tables, never missing columns; an index made by an older version would
then fail on its first SELECT. :func:`add_missing_columns` compares the table in the database with the model and
runs one ``ALTER TABLE … ADD COLUMN`` per missing (nullable) column, plus its index, in one transaction
(SQLite and PostgreSQL both run DDL transactionally). Concurrent openers: a column another process added first
is skipped (``IF NOT EXISTS`` on PostgreSQL, a re-read of the columns under SQLite's write lock).
"""

from __future__ import annotations

import logging

from sqlalchemy import Engine, Table, inspect, text
from sqlalchemy.schema import CreateIndex

log = logging.getLogger(__name__)


def add_missing_columns(engine: Engine, table: Table, schema: str | None = None) -> list[str]:
    """Add the columns of ``table`` that the database's table lacks; returns their names."""
    present = {column["name"] for column in inspect(engine).get_columns(table.name, schema=schema)}
    missing = [column for column in table.columns if column.name not in present]
    if not missing:
        return []
    dialect = engine.dialect
    qualified = f"{dialect.identifier_preparer.quote(schema)}." if schema else ""
    name = qualified + dialect.identifier_preparer.quote(table.name)
    added = []
    with engine.begin() as connection:
        if dialect.name == "sqlite":
            connection.exec_driver_sql("BEGIN IMMEDIATE")  # take the write lock before re-reading the columns
            present = {row[1] for row in connection.exec_driver_sql(f"PRAGMA table_info({name})")}
        for column in missing:
            if column.name in present:
                continue
            if not column.nullable:
                raise RuntimeError(f"cannot add the non-nullable column {column.name} to {table.name} in place")
            kind = column.type.compile(dialect=dialect)
            exists = " IF NOT EXISTS" if dialect.name == "postgresql" else ""
            column_name = dialect.identifier_preparer.quote(column.name)
            connection.execute(text(f"ALTER TABLE {name} ADD COLUMN{exists} {column_name} {kind}"))
            for index in table.indexes:
                if [c.name for c in index.columns] == [column.name]:
                    connection.execute(CreateIndex(index, if_not_exists=True))
            added.append(column.name)
    if added:
        log.warning("metadata migrated in place", extra={"table": table.name, "added_columns": added})
    return added
