// Mandatum: open the approval iframe's encrypted messages in the browser, with WebCrypto alone
// (docs/journey.md, "Encrypted messages"). No library, no CDN; any JOSE library does the same
// (jose: `await compactDecrypt(jwe, privateKey)`).
//
// A request created with `iframe: {pubKey}` gets messages {type: "mandatum.encrypted", jwe} where
// `jwe` is a JWE compact serialization: alg ECDH-ES (RFC 7518 §4.6, ephemeral P-256 key in `epk`,
// Concat KDF with SHA-256), enc A256GCM, kid the RFC 7638 thumbprint of your key, cty
// application/json. Its plaintext is the `credential` webhook event, byte for byte.
//
// Make the key pair once, keep the private key (a non-extractable CryptoKey in IndexedDB, say),
// and send the public key as `iframe.pubKey`:
//
//   var pair = await crypto.subtle.generateKey({name: "ECDH", namedCurve: "P-256"}, false, ["deriveBits"]);
//   var spki = await crypto.subtle.exportKey("spki", pair.publicKey);
//   var pubKey = btoa(String.fromCharCode.apply(null, new Uint8Array(spki)));   // iframe.pubKey

async function mandatumOpen(jwe, privateKey) {
  "use strict";
  function bytes(b64url) {
    var text = atob(b64url.replace(/-/g, "+").replace(/_/g, "/"));
    return Uint8Array.from(text, function (c) { return c.charCodeAt(0); });
  }
  function u32(n) { return new Uint8Array([n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255]); }
  function concat(parts) {
    var out = new Uint8Array(parts.reduce(function (n, p) { return n + p.length; }, 0)), at = 0;
    parts.forEach(function (p) { out.set(p, at); at += p.length; });
    return out;
  }
  var parts = jwe.split(".");
  if (parts.length !== 5 || parts[1] !== "") throw new Error("not an ECDH-ES compact JWE");
  var header = JSON.parse(new TextDecoder().decode(bytes(parts[0])));
  if (header.alg !== "ECDH-ES" || header.enc !== "A256GCM") throw new Error("unexpected algorithm");
  var epk = await crypto.subtle.importKey(
    "jwk", {kty: "EC", crv: "P-256", x: header.epk.x, y: header.epk.y}, {name: "ECDH", namedCurve: "P-256"},
    false, []);
  var shared = new Uint8Array(await crypto.subtle.deriveBits({name: "ECDH", public: epk}, privateKey, 256));
  // Concat KDF (NIST SP 800-56A), one SHA-256 round: counter, Z, AlgorithmID, PartyUInfo,
  // PartyVInfo (both empty), SuppPubInfo (the key length in bits)
  var algorithm = new TextEncoder().encode(header.enc);
  var kdfInput = concat([u32(1), shared, u32(algorithm.length), algorithm, u32(0), u32(0), u32(256)]);
  var cek = await crypto.subtle.importKey(
    "raw", await crypto.subtle.digest("SHA-256", kdfInput), "AES-GCM", false, ["decrypt"]);
  var plain = await crypto.subtle.decrypt(
    {name: "AES-GCM", iv: bytes(parts[2]), additionalData: new TextEncoder().encode(parts[0])},
    cek, concat([bytes(parts[3]), bytes(parts[4])]));
  return JSON.parse(new TextDecoder().decode(plain));
}
