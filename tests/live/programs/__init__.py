"""Programs the live tests run under `trainmedic run`; scripts, never imported."""
