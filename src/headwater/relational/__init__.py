"""Database-independent pieces shared by relational connectors (PostgreSQL today, MySQL next).

* `headwater.relational.column_mappers`: Debezium's column transformations
  (``column.truncate.to.<n>.chars``, ``column.mask.with.<n>.chars``,
  ``column.mask.hash[.v2].<algorithm>.with.salt.<salt>``) and source-type propagation
  (``column.propagate.source.type``, ``datatype.propagate.source.type``).
"""
