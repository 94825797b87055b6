//! Moving funds: ERC-20 tokens with the SafeERC20 conventions, or native value when the token
//! is the zero address.

use alloc::vec::Vec;
use alloy_primitives::{Address, U256};
use alloy_sol_types::SolCall;
use bursar_bindings::erc::{IERC20Permit, IERC20};
use stylus_sdk::{call::RawCall, stylus_core::Host};

use crate::{
    call::{call, view},
    calldata::encode,
    eip712::word,
};

/// The zero address stands for the chain's native currency.
pub const NATIVE: Address = Address::ZERO;

/// Calls `token` and applies SafeERC20's rule: success means the call did not revert and
/// returned either `true`, or nothing from an address that has code. (A call to an address
/// without code succeeds with no data: without the code check, a deposit "paid" in a token that
/// does not exist yet would be credited.)
fn call_token<H: Host + ?Sized>(vm: &H, token: Address, data: &[u8]) -> bool {
    token_succeeded(vm, token, call(vm, token, data))
}

/// SafeERC20's rule on a token call's outcome (see [`call_token`]).
fn token_succeeded<H: Host + ?Sized>(
    vm: &H,
    token: Address,
    result: Result<Vec<u8>, Vec<u8>>,
) -> bool {
    match result {
        Ok(out) if out.is_empty() => vm.code_size(token) > 0,
        Ok(out) => out.len() == 32 && out[..] == word(true)[..],
        Err(_) => false,
    }
}

/// `token.balanceOf(account)`, or `None` when the token has no code or answers badly.
pub fn balance_of<H: Host + ?Sized>(vm: &H, token: Address, account: Address) -> Option<U256> {
    let data = encode(IERC20::balanceOfCall::SELECTOR, &[word(account)]);
    let out = view(vm, token, &data)?;
    (out.len() == 32).then(|| U256::from_be_slice(&out))
}

/// Pays `amount` of `token` (native value when `token` is [`NATIVE`]) from this contract to `to`.
pub fn send<H: Host + ?Sized>(vm: &H, token: Address, to: Address, amount: U256) -> bool {
    send_with_gas(vm, token, to, amount, u64::MAX)
}

/// [`send`], giving the token (or the native payee) at most `gas`.
pub fn send_with_gas<H: Host + ?Sized>(
    vm: &H,
    token: Address,
    to: Address,
    amount: U256,
    gas: u64,
) -> bool {
    if token == NATIVE {
        // SAFETY: as in `call::call`: the cache is cleared first, as the recipient may run code
        // and call back into us.
        return unsafe {
            RawCall::new_with_value(vm, amount)
                .gas(gas)
                .clear_storage_cache()
                .skip_return_data()
                .call(to, &[])
        }
        .is_ok();
    }
    let data = encode(IERC20::transferCall::SELECTOR, &[word(to), word(amount)]);
    // SAFETY: as in `call::call`.
    let result = unsafe {
        RawCall::new(vm)
            .gas(gas)
            .clear_storage_cache()
            .call(token, &data)
    };
    token_succeeded(vm, token, result)
}

/// Pulls `amount` of `token` from `from` into this contract (needs an allowance).
pub fn pull<H: Host + ?Sized>(vm: &H, token: Address, from: Address, amount: U256) -> bool {
    call_token(
        vm,
        token,
        &encode(
            IERC20::transferFromCall::SELECTOR,
            &[word(from), word(vm.contract_address()), word(amount)],
        ),
    )
}

/// Submits an EIP-2612 permit (`r ‖ s ‖ v`) letting `spender` spend `value` of `owner`'s
/// tokens. Its outcome is deliberately ignored: a permit that was front-run has already set the
/// allowance, and a missing allowance makes the following [`pull`] fail with a clear error.
pub fn permit<H: Host + ?Sized>(
    vm: &H,
    token: Address,
    owner: Address,
    spender: Address,
    value: U256,
    deadline: U256,
    signature: &[u8],
) {
    if signature.len() != 65 {
        return;
    }
    let mut r = [0u8; 32];
    let mut s = [0u8; 32];
    r.copy_from_slice(&signature[..32]);
    s.copy_from_slice(&signature[32..64]);
    let data = encode(
        IERC20Permit::permitCall::SELECTOR,
        &[
            word(owner),
            word(spender),
            word(value),
            word(deadline),
            word(U256::from(match signature[64] {
                v @ (0 | 1) => v + 27,
                v => v,
            })),
            r,
            s,
        ],
    );
    call_token(vm, token, &data);
}
