"""The ``carbondata`` data source: planning and reading batches, the table version a query reads, and what read tasks compute for the extension (partial counts, partition values)."""
