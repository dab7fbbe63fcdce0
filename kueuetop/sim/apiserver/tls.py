"""A throwaway certificate authority and server certificate for the simulated API server.

client-go (kubectl) sends a bearer token only over TLS, so `sim serve --token-file` serves
HTTPS with a CA generated at start and written into the kubeconfig as
`certificate-authority-data`. Generated here with the standard library alone (RSA-2048 keys,
SHA-256 PKCS#1 v1.5 signatures, DER by hand) so serving needs no extra package and no
`openssl` binary. The keys live in memory and, for the few microseconds Python's ssl module
needs to load them, in a private temporary directory.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import ipaddress
import secrets
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path

# ----------------------------------------------------------------------------- DER


def _len(n: int) -> bytes:
    if n < 0x80:
        return bytes([n])
    b = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([0x80 | len(b)]) + b


def _tlv(tag: int, value: bytes) -> bytes:
    return bytes([tag]) + _len(len(value)) + value


def _int(n: int) -> bytes:
    return _tlv(0x02, n.to_bytes(n.bit_length() // 8 + 1, "big", signed=True))


def _seq(*items: bytes) -> bytes:
    return _tlv(0x30, b"".join(items))


def _oid(dotted: str) -> bytes:
    parts = [int(x) for x in dotted.split(".")]
    out = bytearray([40 * parts[0] + parts[1]])
    for p in parts[2:]:
        chunk = [p & 0x7F]
        p >>= 7
        while p:
            chunk.append(0x80 | (p & 0x7F))
            p >>= 7
        out += bytes(reversed(chunk))
    return _tlv(0x06, bytes(out))


def _bits(data: bytes, unused: int = 0) -> bytes:
    return _tlv(0x03, bytes([unused]) + data)


def _octets(data: bytes) -> bytes:
    return _tlv(0x04, data)


def _explicit(n: int, value: bytes) -> bytes:
    return _tlv(0xA0 | n, value)


def _utc(t: dt.datetime) -> bytes:
    return _tlv(0x17, t.strftime("%y%m%d%H%M%SZ").encode())


_NULL = b"\x05\x00"
_TRUE = b"\x01\x01\xff"
RSA_ENCRYPTION = "1.2.840.113549.1.1.1"
SHA256_WITH_RSA = "1.2.840.113549.1.1.11"
# DigestInfo prefix for SHA-256 (RFC 8017 §9.2, note 1).
_SHA256_DIGEST_INFO = bytes.fromhex("3031300d060960864801650304020105000420")


def _name(common_name: str) -> bytes:
    # Name ::= SEQUENCE OF SET OF AttributeTypeAndValue; CN (2.5.4.3) as UTF8String.
    return _seq(_tlv(0x31, _seq(_oid("2.5.4.3"), _tlv(0x0C, common_name.encode()))))


def _ext(oid: str, value: bytes, critical: bool = False) -> bytes:
    return _seq(_oid(oid), *((_TRUE,) if critical else ()), _octets(value))


# ----------------------------------------------------------------------------- RSA

_SMALL_PRIMES = [p for p in range(3, 2000) if all(p % d for d in range(2, int(p ** 0.5) + 1))]


def _probably_prime(n: int, rounds: int = 40) -> bool:
    if any(n % p == 0 for p in _SMALL_PRIMES):
        return n in _SMALL_PRIMES
    d, s = n - 1, 0
    while d % 2 == 0:
        d, s = d // 2, s + 1
    for _ in range(rounds):
        a = secrets.randbelow(n - 3) + 2
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(s - 1):
            x = pow(x, 2, n)
            if x == n - 1:
                break
        else:
            return False
    return True


def _prime(bits: int, e: int) -> int:
    while True:
        # Top two bits set so p*q has exactly 2*bits bits; odd.
        n = secrets.randbits(bits) | (3 << (bits - 2)) | 1
        if (n - 1) % e and _probably_prime(n):
            return n


@dataclass(frozen=True)
class RsaKey:
    n: int
    e: int
    d: int
    p: int
    q: int

    @classmethod
    def generate(cls, bits: int = 2048) -> RsaKey:
        e = 65537
        while True:
            p, q = _prime(bits // 2, e), _prime(bits // 2, e)
            if p != q and (p * q).bit_length() == bits:
                break
        d = pow(e, -1, (p - 1) * (q - 1))
        return cls(p * q, e, d, p, q)

    def public_key_info(self) -> bytes:
        return _seq(_seq(_oid(RSA_ENCRYPTION), _NULL), _bits(_seq(_int(self.n), _int(self.e))))

    def sign_sha256(self, data: bytes) -> bytes:
        k = (self.n.bit_length() + 7) // 8
        t = _SHA256_DIGEST_INFO + hashlib.sha256(data).digest()
        em = b"\x00\x01" + b"\xff" * (k - len(t) - 3) + b"\x00" + t
        return pow(int.from_bytes(em, "big"), self.d, self.n).to_bytes(k, "big")

    def private_pem(self) -> bytes:
        # PKCS#1 RSAPrivateKey (RFC 8017 A.1.2).
        p, q, d = self.p, self.q, self.d
        der = _seq(_int(0), _int(self.n), _int(self.e), _int(d), _int(p), _int(q), _int(d % (p - 1)),
                   _int(d % (q - 1)), _int(pow(q, -1, p)))
        return _pem("RSA PRIVATE KEY", der)


def _pem(label: str, der: bytes) -> bytes:
    b64 = base64.encodebytes(der).replace(b"\n", b"")
    lines = [b64[i:i + 64] for i in range(0, len(b64), 64)]
    return b"".join([f"-----BEGIN {label}-----\n".encode(), *(x + b"\n" for x in lines),
                     f"-----END {label}-----\n".encode()])


def _certificate(subject: str, key: RsaKey, issuer: str, issuer_key: RsaKey, extensions: list[bytes],
                 days: int) -> bytes:
    now = dt.datetime.now(dt.UTC).replace(microsecond=0)
    alg = _seq(_oid(SHA256_WITH_RSA), _NULL)
    serial = secrets.randbits(127) | 1  # positive, at most 20 octets (RFC 5280 §4.1.2.2)
    tbs = _seq(_explicit(0, _int(2)), _int(serial), alg, _name(issuer),
               _seq(_utc(now - dt.timedelta(hours=1)), _utc(now + dt.timedelta(days=days))),
               _name(subject), key.public_key_info(), _explicit(3, _seq(*extensions)))
    return _seq(tbs, alg, _bits(issuer_key.sign_sha256(tbs)))


def _key_id(key: RsaKey) -> bytes:
    return hashlib.sha1(_seq(_int(key.n), _int(key.e))).digest()  # RFC 5280 §4.2.1.2 method 1


@dataclass(frozen=True)
class ServerTls:
    """The CA certificate clients trust (PEM) and the server's certificate chain and key (PEM)."""

    ca_pem: bytes
    cert_pem: bytes
    key_pem: bytes

    def server_context(self) -> ssl.SSLContext:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        with tempfile.TemporaryDirectory(prefix="kueuetop-tls-") as d:  # mkdtemp: mode 0700
            cert, key = Path(d) / "cert.pem", Path(d) / "key.pem"
            cert.write_bytes(self.cert_pem)
            key.touch(mode=0o600)
            key.write_bytes(self.key_pem)
            ctx.load_cert_chain(cert, key)
        return ctx


def generate_server_tls(hosts: tuple[str, ...] = ("127.0.0.1", "localhost"), days: int = 30) -> ServerTls:
    """A fresh CA and a server certificate for `hosts` (IP addresses and DNS names) signed by it."""
    ca_key, key = RsaKey.generate(), RsaKey.generate()
    ca_name = f"kueuetop-sim-ca-{secrets.token_hex(4)}"
    ca = _certificate(ca_name, ca_key, ca_name, ca_key, [
        _ext("2.5.29.19", _seq(_TRUE), critical=True),  # basicConstraints: CA
        _ext("2.5.29.15", _bits(b"\x06", 1), critical=True),  # keyUsage: keyCertSign, cRLSign
        _ext("2.5.29.14", _octets(_key_id(ca_key))),  # subjectKeyIdentifier
    ], days)
    alt_names = []
    for h in hosts:
        try:
            alt_names.append(_tlv(0x87, ipaddress.ip_address(h).packed))  # iPAddress [7]
        except ValueError:
            alt_names.append(_tlv(0x82, h.encode()))  # dNSName [2]
    leaf = _certificate("kueuetop-sim", key, ca_name, ca_key, [
        _ext("2.5.29.19", _seq(), critical=True),  # basicConstraints: not a CA
        _ext("2.5.29.15", _bits(b"\xa0", 5), critical=True),  # digitalSignature, keyEncipherment
        _ext("2.5.29.37", _seq(_oid("1.3.6.1.5.5.7.3.1"))),  # extKeyUsage: serverAuth
        _ext("2.5.29.17", _seq(*alt_names)),  # subjectAltName
        _ext("2.5.29.35", _seq(_tlv(0x80, _key_id(ca_key)))),  # authorityKeyIdentifier
    ], days)
    ca_pem = _pem("CERTIFICATE", ca)
    return ServerTls(ca_pem, _pem("CERTIFICATE", leaf) + ca_pem, key.private_pem())
