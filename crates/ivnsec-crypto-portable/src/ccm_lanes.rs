//! AES-CCM (SP 800-38C with a 12-byte nonce and a 16-byte tag) over several messages at once,
//! under one key: the multi-buffer form of [`AeadKey::seal_batch`] and
//! [`AeadKey::open_batch`](ivnsec_core::crypto::AeadKey::open_batch).
//!
//! CCM's CBC-MAC is a chain: each block's AES waits for the one before, so one message keeps
//! only one block in AES-NI's pipeline (OpenSSL's one-message CCM runs at about 1.8 cycles/byte
//! on the machine of docs/benchmarks.md, against 0.3 for GCM). Here the chains of up to
//! [`LANES`] messages advance together: each step hands the next block of every message to one
//! `encrypt_blocks` call of eight blocks, which the `aes` crate runs as eight interleaved AES-NI
//! streams (its parallel width; fewer blocks would go one at a time, so idle lanes carry a
//! dummy block). Counter mode is parallel within a message already and runs per message.
//!
//! Written here because no crate offers multi-buffer CCM (the `ccm` crate and OpenSSL take one
//! message per call). The formatting (B0, the AAD length prefix, the counter blocks) is SP
//! 800-38C §A.2; the tests check it against NIST's example vectors, the `ccm` crate and OpenSSL.
//!
//! [`AeadKey::seal_batch`]: ivnsec_core::crypto::AeadKey::seal_batch

use aes::Block;
use aes::cipher::consts::U16;
use aes::cipher::{BlockEncrypt, BlockSizeUser};
use ivnsec_core::crypto::{AEAD_NONCE_LEN, AEAD_TAG_LEN, AeadOp, CryptoError};
use subtle::ConstantTimeEq;

/// Messages whose CBC-MACs run together: the `aes` crate's parallel width with AES-NI.
pub const LANES: usize = 8;
/// Octets of the length field: q = 15 − nonce length (SP 800-38C §A.1).
const Q: usize = 15 - AEAD_NONCE_LEN;
/// Largest payload a 3-octet length field holds.
const MAX_PAYLOAD: usize = (1 << (8 * Q)) - 1;
/// Counter blocks encrypted per call (a multiple of [`LANES`]).
const CTR_CHUNK: usize = 4 * LANES;

/// The blocks the CBC-MAC of one message runs over (§A.2): B0; the AAD after its length prefix,
/// zero-padded to a block; the payload, zero-padded.
#[derive(Clone, Copy)]
struct MacInput<'a> {
    b0: [u8; 16],
    prefix: [u8; 6],
    prefix_len: usize,
    aad: &'a [u8],
    data: &'a [u8],
    aad_blocks: usize,
    blocks: usize,
}

impl MacInput<'static> {
    const EMPTY: MacInput<'static> = MacInput {
        b0: [0; 16],
        prefix: [0; 6],
        prefix_len: 0,
        aad: &[],
        data: &[],
        aad_blocks: 0,
        blocks: 0,
    };
}

/// The AAD length prefix (§A.2.2): none without AAD, 2 octets below 2^16 − 2^8, else
/// 0xFFFE and 4 octets. AAD of 2^32 bytes or more is refused.
fn aad_prefix(aad_len: usize) -> Result<([u8; 6], usize), CryptoError> {
    let mut prefix = [0u8; 6];
    if aad_len == 0 {
        return Ok((prefix, 0));
    }
    if aad_len < 0xFF00 {
        prefix[..2].copy_from_slice(&(aad_len as u16).to_be_bytes());
        return Ok((prefix, 2));
    }
    let a = u32::try_from(aad_len).map_err(|_| CryptoError::BadInputLength)?;
    prefix[..2].copy_from_slice(&[0xFF, 0xFE]);
    prefix[2..].copy_from_slice(&a.to_be_bytes());
    Ok((prefix, 6))
}

fn check_lengths(aad_len: usize, data_len: usize) -> Result<(), CryptoError> {
    if data_len > MAX_PAYLOAD {
        return Err(CryptoError::BadInputLength);
    }
    aad_prefix(aad_len).map(|_| ())
}

impl<'a> MacInput<'a> {
    fn new(
        nonce: &[u8; AEAD_NONCE_LEN],
        aad: &'a [u8],
        data: &'a [u8],
    ) -> Result<MacInput<'a>, CryptoError> {
        check_lengths(aad.len(), data.len())?;
        let (prefix, prefix_len) = aad_prefix(aad.len())?;
        let mut b0 = [0u8; 16];
        let adata = if aad.is_empty() { 0 } else { 0x40 };
        b0[0] = adata | ((((AEAD_TAG_LEN - 2) / 2) as u8) << 3) | (Q as u8 - 1);
        b0[1..1 + AEAD_NONCE_LEN].copy_from_slice(nonce);
        // `data.len() ≤ MAX_PAYLOAD` < 2^24: the low three octets hold it.
        b0[1 + AEAD_NONCE_LEN..].copy_from_slice(&(data.len() as u32).to_be_bytes()[4 - Q..]);
        let aad_blocks = (prefix_len + aad.len()).div_ceil(16);
        Ok(MacInput {
            b0,
            prefix,
            prefix_len,
            aad,
            data,
            aad_blocks,
            blocks: 1 + aad_blocks + data.len().div_ceil(16),
        })
    }

    /// XORs block `k` of the input into `state`.
    fn xor_block(&self, k: usize, state: &mut Block) {
        if k == 0 {
            xor_at(state, 0, &self.b0);
            return;
        }
        let k = k - 1;
        if k < self.aad_blocks {
            if k == 0 {
                let n = (16 - self.prefix_len).min(self.aad.len());
                xor_at(state, 0, &self.prefix[..self.prefix_len]);
                xor_at(state, self.prefix_len, &self.aad[..n]);
            } else {
                let at = 16 * k - self.prefix_len;
                xor_at(state, 0, &self.aad[at..(at + 16).min(self.aad.len())]);
            }
            return;
        }
        let at = 16 * (k - self.aad_blocks);
        xor_at(state, 0, &self.data[at..(at + 16).min(self.data.len())]);
    }
}

/// `state[at..at + bytes.len()] ^= bytes` (`at + bytes.len() ≤ 16`).
#[inline(always)]
fn xor_at(state: &mut Block, at: usize, bytes: &[u8]) {
    if let (0, Ok(whole)) = (at, <&[u8; 16]>::try_from(bytes)) {
        let s: [u8; 16] = (*state).into();
        let x = u128::from_ne_bytes(s) ^ u128::from_ne_bytes(*whole);
        *state = x.to_ne_bytes().into();
        return;
    }
    for (s, b) in state[at..].iter_mut().zip(bytes) {
        *s ^= b;
    }
}

/// The CBC-MAC (the unmasked tag, T of §6.1) of each of `inputs` (at most [`LANES`]), their
/// chains advanced together.
fn cbc_macs<C>(cipher: &C, inputs: &[MacInput<'_>], macs: &mut [Block; LANES])
where
    C: BlockEncrypt + BlockSizeUser<BlockSize = U16>,
{
    *macs = [Block::default(); LANES];
    let steps = inputs.iter().map(|i| i.blocks).max().unwrap_or(0);
    for k in 0..steps {
        for (input, mac) in inputs.iter().zip(macs.iter_mut()) {
            // A finished chain keeps its MAC aside from the dummy work below.
            if k < input.blocks {
                input.xor_block(k, mac);
            }
        }
        if inputs.iter().all(|i| k < i.blocks) {
            // Every lane (dummy ones past `inputs` included) goes through AES: eight blocks in
            // one call are interleaved, fewer would run one by one.
            cipher.encrypt_blocks(macs);
        } else {
            let mut work = *macs;
            cipher.encrypt_blocks(&mut work);
            for (i, input) in inputs.iter().enumerate() {
                if k < input.blocks {
                    macs[i] = work[i];
                }
            }
        }
    }
}

/// Counter block i of a message (§A.3): flags q − 1, the nonce, i in q octets.
fn counter_block(nonce: &[u8; AEAD_NONCE_LEN], i: usize) -> Block {
    let mut a = [0u8; 16];
    a[0] = Q as u8 - 1;
    a[1..1 + AEAD_NONCE_LEN].copy_from_slice(nonce);
    a[1 + AEAD_NONCE_LEN..].copy_from_slice(&(i as u32).to_be_bytes()[4 - Q..]);
    a.into()
}

/// S0 = E(A0) of each nonce, in one call.
fn s0s<C>(cipher: &C, nonces: &[[u8; AEAD_NONCE_LEN]]) -> [Block; LANES]
where
    C: BlockEncrypt + BlockSizeUser<BlockSize = U16>,
{
    let mut s = [Block::default(); LANES];
    for (b, n) in s.iter_mut().zip(nonces) {
        *b = counter_block(n, 0);
    }
    cipher.encrypt_blocks(&mut s);
    s
}

/// XORs the key stream from counter 1 into `data` (encryption and decryption alike).
fn ctr<C>(cipher: &C, nonce: &[u8; AEAD_NONCE_LEN], data: &mut [u8])
where
    C: BlockEncrypt + BlockSizeUser<BlockSize = U16>,
{
    let mut ks = [Block::default(); CTR_CHUNK];
    for (c, chunk) in data.chunks_mut(16 * CTR_CHUNK).enumerate() {
        let first = 1 + c * CTR_CHUNK;
        let n = chunk.len().div_ceil(16);
        // Whole groups of LANES blocks: a shorter tail would run one block at a time.
        let padded = n.next_multiple_of(LANES);
        for (j, b) in ks[..padded].iter_mut().enumerate() {
            *b = counter_block(nonce, first + j);
        }
        cipher.encrypt_blocks(&mut ks[..padded]);
        for (piece, k) in chunk.chunks_mut(16).zip(&ks) {
            xor_slice(piece, k);
        }
    }
}

fn xor_slice(piece: &mut [u8], k: &Block) {
    if let Ok(whole) = <&mut [u8; 16]>::try_from(&mut *piece) {
        let kb: [u8; 16] = (*k).into();
        *whole = (u128::from_ne_bytes(*whole) ^ u128::from_ne_bytes(kb)).to_ne_bytes();
        return;
    }
    for (p, x) in piece.iter_mut().zip(k.iter()) {
        *p ^= x;
    }
}

fn masked(mac: &Block, s0: &Block) -> [u8; AEAD_TAG_LEN] {
    let mut t = [0u8; AEAD_TAG_LEN];
    for ((t, m), s) in t.iter_mut().zip(mac.iter()).zip(s0.iter()) {
        *t = m ^ s;
    }
    t
}

/// Seals every op (each `tag` written, each `result` set).
pub fn seal_batch<C>(cipher: &C, ops: &mut [AeadOp<'_>])
where
    C: BlockEncrypt + BlockSizeUser<BlockSize = U16>,
{
    for group in ops.chunks_mut(LANES) {
        seal_group(cipher, group);
    }
}

fn seal_group<C>(cipher: &C, group: &mut [AeadOp<'_>])
where
    C: BlockEncrypt + BlockSizeUser<BlockSize = U16>,
{
    // Lane j of the MAC work is op `at[j]` of the group; refused ops take no lane.
    let mut at = [0usize; LANES];
    let mut nonces = [[0u8; AEAD_NONCE_LEN]; LANES];
    let mut macs = [Block::default(); LANES];
    let mut lanes = 0;
    {
        let mut inputs = [MacInput::EMPTY; LANES];
        for (i, op) in group.iter_mut().enumerate() {
            match MacInput::new(&op.nonce, op.aad, op.in_out) {
                Ok(input) => {
                    inputs[lanes] = input;
                    nonces[lanes] = op.nonce;
                    at[lanes] = i;
                    lanes += 1;
                }
                Err(e) => op.result = Err(e),
            }
        }
        cbc_macs(cipher, &inputs[..lanes], &mut macs);
    }
    let s0 = s0s(cipher, &nonces[..lanes]);
    for j in 0..lanes {
        let op = &mut group[at[j]];
        ctr(cipher, &op.nonce, op.in_out);
        op.tag = masked(&macs[j], &s0[j]);
        op.result = Ok(());
    }
}

/// Opens every op (each `result` set; a refused op's `in_out` is zeroed).
pub fn open_batch<C>(cipher: &C, ops: &mut [AeadOp<'_>])
where
    C: BlockEncrypt + BlockSizeUser<BlockSize = U16>,
{
    for group in ops.chunks_mut(LANES) {
        open_group(cipher, group);
    }
}

fn open_group<C>(cipher: &C, group: &mut [AeadOp<'_>])
where
    C: BlockEncrypt + BlockSizeUser<BlockSize = U16>,
{
    let mut at = [0usize; LANES];
    let mut nonces = [[0u8; AEAD_NONCE_LEN]; LANES];
    let mut lanes = 0;
    for (i, op) in group.iter_mut().enumerate() {
        match check_lengths(op.aad.len(), op.in_out.len()) {
            Ok(()) => {
                // Decrypt first: the MAC is over the plaintext.
                ctr(cipher, &op.nonce, op.in_out);
                nonces[lanes] = op.nonce;
                at[lanes] = i;
                lanes += 1;
            }
            Err(e) => op.result = Err(e),
        }
    }
    let mut macs = [Block::default(); LANES];
    {
        let mut inputs = [MacInput::EMPTY; LANES];
        for j in 0..lanes {
            let op = &group[at[j]];
            // The lengths were checked above: `new` cannot refuse them now.
            if let Ok(input) = MacInput::new(&op.nonce, op.aad, op.in_out) {
                inputs[j] = input;
            }
        }
        cbc_macs(cipher, &inputs[..lanes], &mut macs);
    }
    let s0 = s0s(cipher, &nonces[..lanes]);
    for j in 0..lanes {
        let op = &mut group[at[j]];
        let ok: bool = masked(&macs[j], &s0[j]).ct_eq(&op.tag).into();
        if ok {
            op.result = Ok(());
        } else {
            op.in_out.fill(0);
            op.result = Err(CryptoError::AuthFailed);
        }
    }
}

#[cfg(test)]
mod tests;
