#!/usr/bin/env node
/*
 * Independent eddsa-jcs-2022 verifier for Mandatum's interoperability tests.
 *
 * Uses Digital Bazaar's libraries (jsonld-signatures, @digitalbazaar/data-integrity,
 * @digitalbazaar/eddsa-jcs-2022-cryptosuite, @digitalbazaar/vc) with a strictly OFFLINE
 * document loader: it serves only the standard contexts shipped in npm packages, the documents
 * passed in the job, and did:key documents derived from the identifier itself. Any other URL
 * is an error; nothing is ever fetched from the network.
 *
 * stdin: one JSON job
 *   {
 *     "document": {...},                          the secured document
 *     "kind": "credential"|"presentation"|"receipt",
 *     "purpose": "assertionMethod"|"authentication",   (default: authentication for a
 *                                                        presentation, else assertionMethod)
 *     "challenge": "...", "domain": "...",          (presentations)
 *     "documents": {"<url or did>": {...}},        DID documents and contexts to serve
 *     "checkIssuer": true,                          credentials: the issuer must control the
 *                                                   key (CredentialIssuancePurpose); default true
 *     "jsonld": true,                               also require JSON-LD safe-mode RDF
 *                                                   canonicalization of the whole document to
 *                                                   succeed (when it has an @context); default true
 *     "now": "2025-01-01T00:00:00Z"                 credentials: the time for validFrom/validUntil
 *     "status": "check"|"skip"                      credentials with a credentialStatus
 *                                                   (BitstringStatusListEntry): "check" (default)
 *                                                   verifies the status list credential, which
 *                                                   must be among "documents" under its URL, and
 *                                                   fails a credential whose bit is set; "skip"
 *                                                   accepts the status unchecked
 *   }
 * stdout: {"verified": bool, "errors": [string, ...]}
 * (stdin may also be an array of jobs; stdout is then the array of their results, in order)
 * Exit code 0 whether or not the document verifies; non-zero only on a harness error
 * (unreadable job, missing dependency).
 */
import * as vc from '@digitalbazaar/vc';
import * as Ed25519Multikey from '@digitalbazaar/ed25519-multikey';
import * as credentialsContext from '@digitalbazaar/credentials-context';
import dataIntegrityContext from '@digitalbazaar/data-integrity-context';
import didContext from 'did-context';
import jsigs from 'jsonld-signatures';
import jsonld from 'jsonld';
import multikeyContext from '@digitalbazaar/multikey-context';
import {DataIntegrityProof} from '@digitalbazaar/data-integrity';
import {createVerifyCryptosuite} from '@digitalbazaar/eddsa-jcs-2022-cryptosuite';
import {gunzipSync} from 'node:zlib';

const {purposes: {AssertionProofPurpose, AuthenticationProofPurpose}} = jsigs;

const DID_CONTEXT_V1 = 'https://www.w3.org/ns/did/v1';
const MULTIKEY_CONTEXT_V1 = 'https://w3id.org/security/multikey/v1';

// standard contexts, from the npm packages only
const STATIC = new Map();
for(const m of [
  credentialsContext.contexts, dataIntegrityContext.contexts,
  didContext.contexts, multikeyContext.contexts
]) {
  for(const [url, ctx] of m) {
    STATIC.set(url, ctx);
  }
}

async function readStdin() {
  const chunks = [];
  for await (const chunk of process.stdin) {
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

// did:key (Ed25519 only): the DID document is derived from the identifier, offline
async function didKeyDocument(did) {
  const fingerprint = did.slice('did:key:'.length);
  if(!fingerprint.startsWith('z6Mk')) {
    throw new Error(`Only Ed25519 did:key is supported: "${did}".`);
  }
  // validates the multibase/multicodec encoding
  await Ed25519Multikey.from({
    '@context': MULTIKEY_CONTEXT_V1, type: 'Multikey',
    id: `${did}#${fingerprint}`, controller: did,
    publicKeyMultibase: fingerprint
  });
  const vmId = `${did}#${fingerprint}`;
  return {
    '@context': [DID_CONTEXT_V1, MULTIKEY_CONTEXT_V1],
    id: did,
    verificationMethod: [{
      id: vmId, type: 'Multikey', controller: did, publicKeyMultibase: fingerprint
    }],
    authentication: [vmId],
    assertionMethod: [vmId],
    capabilityDelegation: [vmId],
    capabilityInvocation: [vmId]
  };
}

function absolute(base, ref) {
  return typeof ref === 'string' && ref.startsWith('#') ? base + ref : ref;
}

function makeDocumentLoader(documents) {
  const given = new Map(Object.entries(documents || {}));

  async function baseDocument(url) {
    if(STATIC.has(url)) {
      return STATIC.get(url);
    }
    if(given.has(url)) {
      return given.get(url);
    }
    if(url.startsWith('did:key:')) {
      return didKeyDocument(url);
    }
    throw new Error(
      `Offline document loader: "${url}" is not a standard context, a given ` +
      'document or a did:key; refusing to fetch it.');
  }

  return async function documentLoader(url) {
    const hash = url.indexOf('#');
    if(hash === -1 || given.has(url)) {
      return {contextUrl: null, documentUrl: url, document: await baseDocument(url)};
    }
    // a verification method: find it in its controller document
    const base = url.slice(0, hash);
    const doc = await baseDocument(base);
    const docId = doc.id || base;
    const candidates = [...(doc.verificationMethod || [])];
    for(const rel of ['assertionMethod', 'authentication', 'capabilityInvocation',
      'capabilityDelegation', 'keyAgreement']) {
      for(const v of [].concat(doc[rel] || [])) {
        if(v && typeof v === 'object') {
          candidates.push(v);
        }
      }
    }
    const vm = candidates.find(v => absolute(docId, v.id) === url);
    if(!vm) {
      throw new Error(`Verification method "${url}" not found in "${base}".`);
    }
    const document = {'@context': doc['@context'], ...vm, id: url};
    if(typeof document.controller === 'string') {
      document.controller = absolute(docId, document.controller);
    }
    return {contextUrl: null, documentUrl: url, document};
  };
}

function messages(err, out = []) {
  if(!err) {
    return out;
  }
  if(Array.isArray(err)) {
    err.forEach(e => messages(e, out));
    return out;
  }
  if(err.errors && Array.isArray(err.errors) && err.errors.length) {
    messages(err.errors, out);
    return out;
  }
  let text = err.message ? `${err.name || 'Error'}: ${err.message}` : String(err);
  // jsonld.js wraps the document loader's error
  const cause = err.details?.cause ?? err.cause;
  if(cause?.message) {
    text += ` (cause: ${cause.message})`;
  }
  out.push(text);
  return out;
}

function collectErrors(result) {
  const errors = [];
  messages(result.error, errors);
  messages(result.statusResult?.error, errors);
  for(const r of result.results || []) {
    messages(r.error, errors);
    messages(r.purposeResult?.error, errors);
  }
  return [...new Set(errors)];
}

// Bitstring Status List v1.0, written from the specification: encodedList is the multibase
// base64url (prefix "u", no padding) of the GZIP-compressed bitstring; index 0 is the most
// significant bit of the first byte.
function statusBit(encodedList, index) {
  if(typeof encodedList !== 'string' || !encodedList.startsWith('u')) {
    throw new Error('encodedList is not multibase base64url');
  }
  const bits = gunzipSync(Buffer.from(encodedList.slice(1), 'base64url'));
  if(!Number.isInteger(index) || index < 0 || index >= bits.length * 8) {
    throw new RangeError(`statusListIndex ${index} is outside the list`);
  }
  return (bits[index >> 3] >> (7 - (index & 7))) & 1;
}

function makeCheckStatus(job, documentLoader) {
  return async function checkStatus({credential}) {
    if(job.status === 'skip') {
      return {verified: true};
    }
    const entry = credential.credentialStatus;
    if(entry?.type !== 'BitstringStatusListEntry') {
      return {verified: false, error: new Error(`unsupported status type ${entry?.type}`)};
    }
    const listUrl = entry.statusListCredential;
    const list = (job.documents || {})[listUrl];
    if(!list) {
      return {verified: false, error: new Error(`status list ${listUrl} not given`)};
    }
    const suite = new DataIntegrityProof({cryptosuite: createVerifyCryptosuite()});
    const listResult = await vc.verifyCredential({
      credential: structuredClone(list), suite, documentLoader,
      purpose: new vc.CredentialIssuancePurpose(),
      checkStatus: async () => ({verified: true})
    });
    if(!listResult.verified) {
      return {verified: false, error: new Error(
        `status list credential does not verify: ${collectErrors(listResult).join('; ')}`)};
    }
    if(list.issuer !== credential.issuer) {
      return {verified: false, error: new Error('status list issuer is not the credential issuer')};
    }
    const subject = list.credentialSubject;
    if(subject?.statusPurpose !== entry.statusPurpose) {
      return {verified: false, error: new Error('status purpose mismatch')};
    }
    const bit = statusBit(subject.encodedList, Number.parseInt(entry.statusListIndex, 10));
    return bit === 0 ? {verified: true} :
      {verified: false, error: new Error(`credential status: ${entry.statusPurpose} bit set`)};
  };
}

async function verifyJob(job) {
  const {document, kind} = job;
  if(!document || typeof document !== 'object' || Array.isArray(document)) {
    throw new TypeError('job.document must be a JSON object.');
  }
  if(!['credential', 'presentation', 'receipt'].includes(kind)) {
    throw new TypeError(`job.kind must be credential, presentation or receipt: "${kind}".`);
  }
  const purposeTerm = job.purpose ||
    (kind === 'presentation' ? 'authentication' : 'assertionMethod');
  const documentLoader = makeDocumentLoader(job.documents);
  const suite = new DataIntegrityProof({cryptosuite: createVerifyCryptosuite()});
  // the libraries mutate/shallow-copy; give each step its own copy
  const copy = () => structuredClone(document);

  let purpose;
  if(purposeTerm === 'authentication') {
    if(typeof job.challenge !== 'string') {
      throw new TypeError('job.challenge is required for authentication.');
    }
    purpose = new AuthenticationProofPurpose({
      challenge: job.challenge, domain: job.domain
    });
  } else if(purposeTerm === 'assertionMethod') {
    purpose = kind === 'credential' && job.checkIssuer !== false ?
      new vc.CredentialIssuancePurpose() : new AssertionProofPurpose();
  } else {
    throw new TypeError(`Unsupported purpose "${purposeTerm}".`);
  }

  const errors = [];
  let verified = false;
  try {
    let result;
    if(kind === 'credential') {
      result = await vc.verifyCredential({
        credential: copy(), suite, purpose, documentLoader,
        now: job.now ? new Date(job.now) : undefined,
        checkStatus: makeCheckStatus(job, documentLoader)
      });
    } else {
      if(kind === 'presentation') {
        // data model checks of a presentation (context, type); the embedded
        // credentials are verified as separate credential jobs
        vc._checkPresentation(document);
      }
      result = await jsigs.verify(copy(), {suite, purpose, documentLoader});
    }
    verified = result.verified === true;
    if(!verified) {
      errors.push(...collectErrors(result));
      if(errors.length === 0) {
        errors.push('Error: not verified (no error given)');
      }
    }
  } catch(e) {
    verified = false;
    errors.push(...messages(e));
  }

  // JSON-LD: what an RDF-canonicalizing (eddsa-rdfc-2022) verifier would need: every term
  // defined, every IRI absolute, every context resolvable; safe mode makes any loss an error
  if(job.jsonld !== false && document['@context'] !== undefined) {
    try {
      await jsonld.canonize(copy(), {
        algorithm: 'RDFC-1.0', format: 'application/n-quads',
        safe: true, documentLoader
      });
    } catch(e) {
      verified = false;
      const details = e.details?.event ? ` ${JSON.stringify(e.details.event.details ?? {})}` : '';
      errors.push(`JSON-LD (safe mode): ${messages(e).join('; ')}${details}`);
    }
  }
  return {verified, errors};
}

async function main() {
  let job;
  try {
    job = JSON.parse(await readStdin());
  } catch(e) {
    process.stderr.write(`verify.mjs: cannot read the job from stdin: ${e.message}\n`);
    process.exit(2);
  }
  const run = async one => {
    try {
      return await verifyJob(one);
    } catch(e) {
      // a malformed job is the caller's error, reported but not a crash
      return {verified: false, errors: messages(e)};
    }
  };
  // an array of jobs (one node start for many checks) gives an array of results
  const out = Array.isArray(job) ?
    await Promise.all(job.map(run)) : await run(job);
  process.stdout.write(JSON.stringify(out) + '\n');
}

main().catch(e => {
  process.stderr.write(`verify.mjs: ${e.stack || e}\n`);
  process.exit(2);
});
