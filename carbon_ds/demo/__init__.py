"""The quick-start demo (``python -m carbon_ds.demo``) and the telemetry data it generates."""
