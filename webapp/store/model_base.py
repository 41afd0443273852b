"""What every table shares: the declarative base with its constraint naming convention, UTC
timestamps, and the column shapes that repeat (``Annotated`` aliases).

``models.py`` (corpora, jobs, tokenizers, leaderboards) and ``models_auth.py`` (accounts,
teams, sharing) both build on it, so neither has to import the other to get a base class.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any

from sqlalchemy import JSON, BigInteger, DateTime, ForeignKey, Integer, MetaData, String, TypeDecorator
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, mapped_column

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

def utcnow() -> dt.datetime:
    """The current time, timezone-aware in UTC (naive datetimes are a bug magnet)."""
    return dt.datetime.now(dt.timezone.utc)


class UTCDateTime(TypeDecorator[dt.datetime]):
    """A timestamp that is always returned as UTC-aware, even from SQLite (which drops zones)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: dt.datetime | None, dialect: Dialect) -> dt.datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("Timestamps must be timezone-aware; use webapp.store.models.utcnow().")
        return value.astimezone(dt.timezone.utc)

    def process_result_value(self, value: dt.datetime | None, dialect: Dialect) -> dt.datetime | None:
        if value is not None and value.tzinfo is None:
            return value.replace(tzinfo=dt.timezone.utc)
        return value


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map = {dict[str, Any]: JSON, list[Any]: JSON}


#: The longest name of anything a user names: the width of every name column, and the bound
#: of every name field (``web/forms.py``'s ``Name`` rule).
MAX_NAME = 200

IntPK = Annotated[int, mapped_column(Integer, primary_key=True)]
Name = Annotated[str, mapped_column(String(MAX_NAME))]
Created = Annotated[dt.datetime, mapped_column(UTCDateTime, default=utcnow)]
Timestamp = Annotated[dt.datetime | None, mapped_column(UTCDateTime)]
JSONDict = Annotated[dict[str, Any], mapped_column(JSON, default=dict)]
JSONList = Annotated[list[Any], mapped_column(JSON, default=list)]
Count = Annotated[int, mapped_column(BigInteger, default=0)]


TeamFK = Annotated[int, mapped_column(ForeignKey("teams.id", ondelete="CASCADE"), index=True)]
