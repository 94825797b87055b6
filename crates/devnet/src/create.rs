//! CREATE / CREATE2 with EVM initcode.
//!
//! This devnet has no general EVM. Stylus programs are deployed by EVM initcode, though: the
//! 43-byte cargo-stylus prelude (`PUSH32 len; DUP1; PUSH1 43; PUSH1 0; CODECOPY; PUSH1 0;
//! RETURN`). `run_initcode` is a deliberately minimal interpreter for exactly that shape of
//! code: `STOP`, `PUSH1`..`PUSH32`, `DUP1`..`DUP16`, `CODECOPY`, `RETURN` and `REVERT`, with
//! EVM gas and memory-expansion pricing. Any other opcode fails the creation like an invalid
//! opcode does (all gas consumed), so unsupported initcode is never silently mis-executed.

use alloy_primitives::{Address, Bytes, B256, U256};

use crate::meter::{self, CODE_DEPOSIT_GAS, MAX_CALL_DEPTH};
use crate::stylus::is_stylus_program;
use crate::world::World;

/// The result of a creation.
#[derive(Debug)]
pub(crate) struct CreateResult {
    /// The new contract, `None` on failure.
    pub address: Option<Address>,
    /// Revert data when the initcode reverted (empty otherwise).
    pub revert_data: Bytes,
    pub gas_left: u64,
}

impl CreateResult {
    fn failed(revert_data: Bytes, gas_left: u64) -> Self {
        CreateResult {
            address: None,
            revert_data,
            gas_left,
        }
    }
}

/// Creates a contract from `initcode` on behalf of `creator`.
pub(crate) fn create(
    mut world: Box<World>,
    creator: Address,
    value: U256,
    initcode: Vec<u8>,
    salt: Option<B256>,
    gas: u64,
    depth: usize,
) -> (Box<World>, CreateResult) {
    if depth >= MAX_CALL_DEPTH || world.state.balance(creator) < value {
        return (world, CreateResult::failed(Bytes::new(), gas));
    }
    let nonce = world.state.increment_nonce(creator);
    let address = match salt {
        Some(salt) => creator.create2_from_code(salt, &initcode),
        None => creator.create(nonce),
    };
    world.state.warm_account(address);
    let collision = world
        .state
        .account(address)
        .is_some_and(|a| a.nonce != 0 || !a.code.is_empty());
    if collision {
        return (world, CreateResult::failed(Bytes::new(), 0));
    }

    let cp = world.state.checkpoint();
    world.state.touch(address);
    world.state.set_nonce(address, 1);
    world
        .state
        .transfer(creator, address, value)
        .expect("balance checked above");

    let result = match run_initcode(&initcode, gas) {
        Initcode::Return { code, gas_left } => {
            let deposit = CODE_DEPOSIT_GAS * code.len() as u64;
            // EIP-3541 rejects code starting with 0xEF, except Stylus programs on Arbitrum.
            let bad_prefix = code.first() == Some(&0xEF) && !is_stylus_program(&code);
            if deposit > gas_left || code.len() > stylus_activation::MAX_CODE_SIZE || bad_prefix {
                CreateResult::failed(Bytes::new(), 0)
            } else {
                world.state.set_code(address, code.into());
                CreateResult {
                    address: Some(address),
                    revert_data: Bytes::new(),
                    gas_left: gas_left - deposit,
                }
            }
        }
        Initcode::Revert { data, gas_left } => CreateResult::failed(data.into(), gas_left),
        Initcode::Fail => CreateResult::failed(Bytes::new(), 0),
    };
    if result.address.is_some() {
        world.state.commit(cp);
    } else {
        world.state.revert(cp);
    }
    (world, result)
}

/// How initcode ended.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Initcode {
    Return {
        code: Vec<u8>,
        gas_left: u64,
    },
    Revert {
        data: Vec<u8>,
        gas_left: u64,
    },
    /// Unsupported opcode, stack error or out of gas: all gas consumed.
    Fail,
}

const VERY_LOW_GAS: u64 = 3;

/// EVM memory cost of `words` words.
fn memory_cost(words: u64) -> u64 {
    3 * words + words * words / 512
}

/// Runs the supported subset of EVM initcode (see the module docs).
pub(crate) fn run_initcode(code: &[u8], gas: u64) -> Initcode {
    let mut stack: Vec<U256> = Vec::new();
    let mut memory: Vec<u8> = Vec::new();
    let mut gas_left = gas;
    let mut pc = 0usize;

    macro_rules! charge {
        ($g:expr) => {{
            let g: u64 = $g;
            if g > gas_left {
                return Initcode::Fail;
            }
            gas_left -= g;
        }};
    }
    macro_rules! pop {
        () => {
            match stack.pop() {
                Some(v) => v,
                None => return Initcode::Fail,
            }
        };
    }
    // Grows memory to cover [offset, offset+size), charging expansion; returns the range.
    macro_rules! expand {
        ($offset:expr, $size:expr) => {{
            let (offset, size) = ($offset, $size);
            if size.is_zero() {
                0..0
            } else {
                let (Ok(offset), Ok(size)) = (u64::try_from(offset), u64::try_from(size)) else {
                    return Initcode::Fail;
                };
                // Far beyond any gas limit; keeps the arithmetic in range.
                if offset > u32::MAX as u64 || size > u32::MAX as u64 {
                    return Initcode::Fail;
                }
                let end = offset + size;
                let old_words = (memory.len() as u64).div_ceil(32);
                let new_words = end.div_ceil(32);
                if new_words > old_words {
                    charge!(memory_cost(new_words) - memory_cost(old_words));
                    memory.resize(new_words as usize * 32, 0);
                }
                offset as usize..end as usize
            }
        }};
    }

    while pc < code.len() {
        let op = code[pc];
        pc += 1;
        match op {
            0x00 => {
                return Initcode::Return {
                    code: Vec::new(),
                    gas_left,
                }
            }
            0x60..=0x7f => {
                charge!(VERY_LOW_GAS);
                let n = (op - 0x5f) as usize;
                let mut word = [0u8; 32];
                // Bytes past the end of the code read as zero, as in the EVM.
                let available = code.len().saturating_sub(pc).min(n);
                word[32 - n..32 - n + available].copy_from_slice(&code[pc..pc + available]);
                stack.push(U256::from_be_bytes(word));
                pc += n;
            }
            0x80..=0x8f => {
                charge!(VERY_LOW_GAS);
                let depth = (op - 0x7f) as usize;
                if stack.len() < depth {
                    return Initcode::Fail;
                }
                stack.push(stack[stack.len() - depth]);
            }
            0x39 => {
                let (dest, offset, size) = (pop!(), pop!(), pop!());
                let words = u64::try_from(size).unwrap_or(u64::MAX).div_ceil(32);
                charge!(VERY_LOW_GAS.saturating_add(words.saturating_mul(3)));
                let range = expand!(dest, size);
                // Source bytes beyond the code read as zero.
                for (i, byte) in memory[range].iter_mut().enumerate() {
                    *byte = usize::try_from(offset)
                        .ok()
                        .and_then(|o| o.checked_add(i))
                        .and_then(|j| code.get(j))
                        .copied()
                        .unwrap_or(0);
                }
            }
            0xf3 | 0xfd => {
                let (offset, size) = (pop!(), pop!());
                let range = expand!(offset, size);
                let data = memory[range].to_vec();
                return if op == 0xf3 {
                    Initcode::Return {
                        code: data,
                        gas_left,
                    }
                } else {
                    Initcode::Revert { data, gas_left }
                };
            }
            _ => return Initcode::Fail,
        }
        if stack.len() > 1024 {
            return Initcode::Fail;
        }
    }
    Initcode::Return {
        code: Vec::new(),
        gas_left,
    }
}

/// Gas for hashing initcode in CREATE2 (exposed for the transaction layer).
pub fn create2_hash_gas(initcode_len: usize) -> u64 {
    meter::KECCAK_WORD_GAS * (initcode_len as u64).div_ceil(32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prelude_returns_the_code() {
        let code = b"\xEF\xF0\x00\x00hello stylus".to_vec();
        let initcode = stylus_activation::deploy_initcode(&code);
        match run_initcode(&initcode, 100_000) {
            Initcode::Return {
                code: out,
                gas_left,
            } => {
                assert_eq!(out, code);
                assert!(gas_left < 100_000);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn unsupported_opcodes_fail() {
        // PUSH1 1, PUSH1 2, ADD
        assert_eq!(
            run_initcode(&[0x60, 1, 0x60, 2, 0x01], 100_000),
            Initcode::Fail
        );
        // RETURN with an empty stack
        assert_eq!(run_initcode(&[0xf3], 100_000), Initcode::Fail);
    }

    #[test]
    fn revert_returns_data() {
        // PUSH1 0 PUSH1 0 REVERT -> empty revert
        assert_eq!(
            run_initcode(&[0x60, 0, 0x60, 0, 0xfd], 100),
            Initcode::Revert {
                data: vec![],
                gas_left: 94
            }
        );
    }
}
