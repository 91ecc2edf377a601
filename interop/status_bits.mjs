#!/usr/bin/env node
/*
 * Reads bits of a W3C Bitstring Status List, written from the specification with Node's own
 * zlib and base64url (nothing of Mandatum's): encodedList is "u" (multibase base64url) + the
 * base64url, without padding, of the GZIP-compressed bitstring; index 0 is the most significant
 * bit of the first byte.
 *
 * stdin:  {"encodedList": "u...", "indices": [n, ...]}
 * stdout: {"length": <bits>, "bits": [0|1, ...], "set": [every index whose bit is 1]}
 * A malformed list is an error (non-zero exit, the reason on stderr).
 */
import {gunzipSync} from 'node:zlib';

const chunks = [];
for await (const chunk of process.stdin) {
  chunks.push(chunk);
}
const {encodedList, indices = []} = JSON.parse(Buffer.concat(chunks).toString('utf8'));
if(typeof encodedList !== 'string' || encodedList[0] !== 'u' || encodedList.includes('=')) {
  throw new Error('encodedList must be "u" + base64url without padding');
}
const bits = gunzipSync(Buffer.from(encodedList.slice(1), 'base64url'));
const length = bits.length * 8;
const bitAt = index => {
  if(!Number.isInteger(index) || index < 0 || index >= length) {
    throw new RangeError(`index ${index} is outside a list of ${length} bits`);
  }
  return (bits[index >> 3] >> (7 - (index & 7))) & 1;
};
const set = [];
for(let i = 0; i < length; i++) {
  if(bitAt(i)) {
    set.push(i);
  }
}
process.stdout.write(JSON.stringify({length, bits: indices.map(bitAt), set}));
