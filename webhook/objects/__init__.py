"""Plain-dict views of Kubernetes objects: where the pod spec lives, tolerant reads of any JSON value."""
