"""Writing a table: the load protocol (reserve, write tasks, one commit point), plain and partitioned."""
