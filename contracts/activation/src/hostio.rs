//! The Stylus host imports (`vm_hooks`) and the debug-chain-only imports, with their exact wasm
//! signatures (nitro `crates/wasm-libraries/forward/lib.rs`, see the host ABI reference §1).

use std::fmt;

/// A wasm value type as it appears in host-import signatures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WasmTy {
    /// 32-bit integer (pointers, lengths, statuses).
    I32,
    /// 64-bit integer (gas, ink, chain id, block numbers and times).
    I64,
    /// 32-bit float (debug `console` imports only).
    F32,
    /// 64-bit float (debug `console` imports only).
    F64,
}

impl fmt::Display for WasmTy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            WasmTy::I32 => "i32",
            WasmTy::I64 => "i64",
            WasmTy::F32 => "f32",
            WasmTy::F64 => "f64",
        })
    }
}

/// One importable host function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostFn {
    /// Import module: [`VM_HOOKS`], or `console` / `debug` on debug chains.
    pub module: &'static str,
    /// Import field name, e.g. `storage_load_bytes32`.
    pub name: &'static str,
    /// Parameter types, in order.
    pub params: &'static [WasmTy],
    /// Result types (none or one for every host function).
    pub results: &'static [WasmTy],
}

impl HostFn {
    /// The signature in the `(i32, i64) -> i32` notation used by error messages.
    pub fn signature(&self) -> String {
        format_signature(self.params, self.results)
    }
}

/// Formats a signature as `(i32, i64) -> i32`, `() -> ()` or `(i32) -> (i32, i32)`.
pub(crate) fn format_signature<T: fmt::Display>(params: &[T], results: &[T]) -> String {
    let join = |tys: &[T]| {
        tys.iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let results = match results.len() {
        1 => join(results),
        _ => format!("({})", join(results)),
    };
    format!("({}) -> {}", join(params), results)
}

/// Module name of all production host imports.
pub const VM_HOOKS: &str = "vm_hooks";

use WasmTy::{F32, F64, I32, I64};

const fn hook(name: &'static str, params: &'static [WasmTy], results: &'static [WasmTy]) -> HostFn {
    HostFn {
        module: VM_HOOKS,
        name,
        params,
        results,
    }
}

/// All 42 `vm_hooks` functions a Stylus host provides, in the reference's order.
pub const VM_HOOKS_FNS: [HostFn; 42] = [
    hook("read_args", &[I32], &[]),
    hook("write_result", &[I32, I32], &[]),
    hook("exit_early", &[I32], &[]),
    hook("storage_load_bytes32", &[I32, I32], &[]),
    hook("storage_cache_bytes32", &[I32, I32], &[]),
    hook("storage_flush_cache", &[I32], &[]),
    hook("transient_load_bytes32", &[I32, I32], &[]),
    hook("transient_store_bytes32", &[I32, I32], &[]),
    hook("call_contract", &[I32, I32, I32, I32, I64, I32], &[I32]),
    hook("delegate_call_contract", &[I32, I32, I32, I64, I32], &[I32]),
    hook("static_call_contract", &[I32, I32, I32, I64, I32], &[I32]),
    hook("create1", &[I32, I32, I32, I32, I32], &[]),
    hook("create2", &[I32, I32, I32, I32, I32, I32], &[]),
    hook("read_return_data", &[I32, I32, I32], &[I32]),
    hook("return_data_size", &[], &[I32]),
    hook("emit_log", &[I32, I32, I32], &[]),
    hook("account_balance", &[I32, I32], &[]),
    hook("account_code", &[I32, I32, I32, I32], &[I32]),
    hook("account_code_size", &[I32], &[I32]),
    hook("account_codehash", &[I32, I32], &[]),
    hook("evm_gas_left", &[], &[I64]),
    hook("evm_ink_left", &[], &[I64]),
    hook("block_basefee", &[I32], &[]),
    hook("chainid", &[], &[I64]),
    hook("block_coinbase", &[I32], &[]),
    hook("block_gas_limit", &[], &[I64]),
    hook("block_number", &[], &[I64]),
    hook("block_timestamp", &[], &[I64]),
    hook("contract_address", &[I32], &[]),
    hook("math_div", &[I32, I32], &[]),
    hook("math_mod", &[I32, I32], &[]),
    hook("math_pow", &[I32, I32], &[]),
    hook("math_add_mod", &[I32, I32, I32], &[]),
    hook("math_mul_mod", &[I32, I32, I32], &[]),
    hook("msg_reentrant", &[], &[I32]),
    hook("msg_sender", &[I32], &[]),
    hook("msg_value", &[I32], &[]),
    hook("native_keccak256", &[I32, I32, I32], &[]),
    hook("tx_gas_price", &[I32], &[]),
    hook("tx_ink_price", &[], &[I32]),
    hook("tx_origin", &[I32], &[]),
    hook("pay_for_memory_grow", &[I32], &[]),
];

const fn debug_fn(
    module: &'static str,
    name: &'static str,
    params: &'static [WasmTy],
    results: &'static [WasmTy],
) -> HostFn {
    HostFn {
        module,
        name,
        params,
        results,
    }
}

/// Imports only linked on debug chains (`console.*`, `debug.*`); rejected on production chains.
pub const DEBUG_FNS: [HostFn; 12] = [
    debug_fn("console", "log_txt", &[I32, I32], &[]),
    debug_fn("console", "log_i32", &[I32], &[]),
    debug_fn("console", "log_i64", &[I64], &[]),
    debug_fn("console", "log_f32", &[F32], &[]),
    debug_fn("console", "log_f64", &[F64], &[]),
    debug_fn("console", "tee_i32", &[I32], &[I32]),
    debug_fn("console", "tee_i64", &[I64], &[I64]),
    debug_fn("console", "tee_f32", &[F32], &[F32]),
    debug_fn("console", "tee_f64", &[F64], &[F64]),
    debug_fn("debug", "null_host", &[], &[]),
    debug_fn("debug", "start_benchmark", &[], &[]),
    debug_fn("debug", "end_benchmark", &[], &[]),
];

/// Looks up a host function by module and name (`debug` also allows `console`/`debug`).
pub fn lookup(module: &str, name: &str, debug: bool) -> Option<&'static HostFn> {
    let prod = VM_HOOKS_FNS.iter();
    let dbg = DEBUG_FNS.iter().filter(|_| debug);
    prod.chain(dbg)
        .find(|f| f.module == module && f.name == name)
}
