"""In-tree admission: the rules CEL can express faithfully without lookups, exported as
ValidatingAdmissionPolicies the apiserver runs itself (`gpu-admission export`). Pure: policy in, objects out."""
