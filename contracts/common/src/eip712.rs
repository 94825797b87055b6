//! EIP-712 hashing over fixed buffers of 32-byte words.

use alloy_primitives::{keccak256, Address, B256, U256};
use stylus_sdk::stylus_core::Host;

/// One ABI word: EIP-712 encodes every atomic field as exactly 32 bytes.
pub type Word = [u8; 32];

/// `keccak256("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)")`
pub const DOMAIN_TYPEHASH: B256 =
    alloy_primitives::b256!("8b73c3c69bb8fe3d512ecc4cf759cc79239f7b179b0ffacaa9a75d522b39400f");

/// Encodes anything word-sized (addresses are left-padded, integers big-endian).
pub trait IntoWord {
    /// The value as one 32-byte ABI word.
    fn into_word(self) -> Word;
}

impl IntoWord for B256 {
    fn into_word(self) -> Word {
        self.0
    }
}

impl IntoWord for U256 {
    fn into_word(self) -> Word {
        self.to_be_bytes()
    }
}

impl IntoWord for Address {
    fn into_word(self) -> Word {
        let mut w = [0u8; 32];
        w[12..].copy_from_slice(self.as_slice());
        w
    }
}

impl IntoWord for u64 {
    fn into_word(self) -> Word {
        let mut w = [0u8; 32];
        w[24..].copy_from_slice(&self.to_be_bytes());
        w
    }
}

impl IntoWord for bool {
    fn into_word(self) -> Word {
        let mut w = [0u8; 32];
        w[31] = self as u8;
        w
    }
}

/// Shorthand for [`IntoWord::into_word`].
pub fn word(value: impl IntoWord) -> Word {
    value.into_word()
}

/// `keccak256` of consecutive words: the `hashStruct` of a struct whose first word is its
/// typehash and whose fields are all atomic (or already hashed).
pub fn hash_words(words: &[Word]) -> B256 {
    keccak256(words.as_flattened())
}

/// The domain separator of the calling contract on the current chain.
///
/// `name_hash` and `version_hash` are `keccak256` of the domain's name and version strings.
pub fn domain_separator<H: Host + ?Sized>(vm: &H, name_hash: B256, version_hash: B256) -> B256 {
    hash_words(&[
        word(DOMAIN_TYPEHASH),
        word(name_hash),
        word(version_hash),
        word(vm.chain_id()),
        word(vm.contract_address()),
    ])
}

/// The digest that is signed: `keccak256("\x19\x01" ‖ domainSeparator ‖ structHash)`.
pub fn typed_data_hash(domain_separator: B256, struct_hash: B256) -> B256 {
    let mut buf = [0u8; 66];
    buf[0] = 0x19;
    buf[1] = 0x01;
    buf[2..34].copy_from_slice(domain_separator.as_slice());
    buf[34..].copy_from_slice(struct_hash.as_slice());
    keccak256(buf)
}
