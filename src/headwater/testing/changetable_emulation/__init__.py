"""What the SQL Server and Db2 emulations (change tables over PostgreSQL) share."""
