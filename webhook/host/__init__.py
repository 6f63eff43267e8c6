"""What a GPU host runs, read from captured text: nvidia-smi, the container toolkit, containerd and CDI.

The parsers (nvsmi, mig, toolkit, containerd, cdi) are pure functions of text; `facts` assembles them from a
`Source` (the live host, or a directory of captured outputs: `sources`); `inventory` and `checks` are pure
functions of the facts and the policy. Nothing here changes a GPU setting."""
