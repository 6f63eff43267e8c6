"""One module per validation rule. Pod checks take (facts, context, policy); claim and DeviceClass checks
take the object itself. Each returns a list of Findings and never mutates its input."""
