"""`bench/load.py --floor`: the AdmissionReview envelope without the policy, as a WSGI app.

What any webhook answering this review must do whatever its policy, with the webhook's own code: read
the body, parse and shape-check the AdmissionReview (`codec.parse`), and answer "allowed" for its uid
(`codec.response`). No policy evaluation, metrics or log. Its throughput against the no-op app is the
ceiling of the webhook's: the policy's share of the request is what lies between the two."""
from __future__ import annotations

from webhook.admission import codec
from webhook.admission.response import allow
from webhook.policy.phase import Phase

_ALLOWED = allow()


def app(environ, start_response):
    body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
    payload = codec.dumps(codec.response(codec.parse(body).uid, _ALLOWED, Phase.VALIDATE))
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(payload)))])
    return [payload]
