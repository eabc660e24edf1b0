"""The Python side of the Catalyst extension (jvm/src): adding it to a session, and the answers its rules ask for: read plans, Spark-native reads of external segments, fresh materialized views."""
