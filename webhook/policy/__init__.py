"""Pure policy: functions of (object view, resolved context, config) returning result values.
No Flask, no Kubernetes client, no I/O, no logging."""
