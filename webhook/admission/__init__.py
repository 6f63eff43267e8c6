"""The admission request path, top to bottom: `http` (the endpoints: read, then decode, handle, encode),
`handlers` (one per endpoint, chosen by its Phase) and `record` (metrics, log lines), `codec` (AdmissionReview
in and out), `render` (every text the answer carries) and `response` (the Outcome and its constructors)."""
