"""The ``carbondata`` data source: its read options, planning input partitions and reading batches, the table
version a query reads, and what read tasks compute for the extension (partial counts, partition values)."""
