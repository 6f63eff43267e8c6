"""`gpu-admission certs`: a CA and a serving certificate for the webhook's Service."""
from __future__ import annotations

import argparse
from pathlib import Path

from webhook.cli.exits import fail
from webhook.tls import certs


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "certs", help="generate a CA and a serving certificate for <service>.<namespace>.svc",
        description="Write ca.crt, ca.key, tls.crt and tls.key (ECDSA P-256; private keys mode 0600). The serving "
        "certificate names <service>.<namespace>.svc and .svc.cluster.local, plus localhost and 127.0.0.1 for "
        "development. Give ca.crt to the webhook configurations' caBundle, tls.crt and tls.key to the server.")
    p.add_argument("--out", type=Path, default=Path("certs"), help="directory to write to (default: certs)")
    p.add_argument("--service", default="gpu-admission", help="the webhook's Service name (default: gpu-admission)")
    p.add_argument("--namespace", default="gpu-admission", help="the Service's namespace (default: gpu-admission)")
    p.add_argument("--days", type=int, default=certs.SERVING_DAYS,
                   help=f"validity of the serving certificate (default: {certs.SERVING_DAYS}; the CA: {certs.CA_DAYS})")
    p.add_argument("--no-localhost", dest="localhost", action="store_false",
                   help="leave localhost and 127.0.0.1 out of the serving certificate")
    p.add_argument("--force", action="store_true", help="replace existing files (a new CA: update the caBundle)")
    p.add_argument("--renew", action="store_true",
                   help="issue a new serving certificate from the CA already in --out (the caBundle stays valid)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.days < 1:
        return fail("--days must be at least 1", command="certs")
    try:
        if args.renew:
            written = certs.renew(args.out, args.service, args.namespace, localhost=args.localhost, days=args.days)
        else:
            bundle = certs.generate(args.service, args.namespace, localhost=args.localhost, days=args.days)
            written = certs.write(bundle, args.out, force=args.force)
    except FileExistsError as exc:
        return fail(f"{exc}; pass --force to replace them", command="certs")
    except (ValueError, OSError) as exc:
        return fail(str(exc), command="certs")
    names = certs.dns_names(args.service, args.namespace, localhost=args.localhost)
    print(f"wrote {', '.join(str(p) for p in written)}")
    print(f"serving certificate for {', '.join(names)}{', 127.0.0.1' if args.localhost else ''}; "
          f"valid {args.days} days")
    return 0
