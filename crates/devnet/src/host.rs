//! The 42 `vm_hooks` host functions (host ABI reference §1) and the per-frame context they act
//! on.
//!
//! Each hostio first buys its base ink (the reference table), then any EVM gas it implies, then
//! does its work. Pointers are offsets into the program's exported `memory`; an out-of-bounds
//! pointer is a program failure (revert, empty data), as is every static-context violation.

use alloy_primitives::{keccak256, Address, Bytes, B256, U256};
use wasmi::errors::HostError;
use wasmi::{Caller, Engine, Linker, Memory, Store};

use crate::frame::{on_enough_stack, CallKind, CallStatus, Message};
use crate::meter::{self, *};
use crate::state::Log;
use crate::world::{CachedSlot, Ctx};

/// Why a program stopped inside a hostio (carried through wasmi as a host error).
#[derive(Debug, thiserror::Error)]
pub(crate) enum Escape {
    /// `exit_early(status)`.
    #[error("exit_early({0})")]
    Exit(u32),
    /// The frame ran out of ink: all gas is consumed.
    #[error("out of ink")]
    OutOfInk,
    /// A program failure: the frame reverts with empty data, unused gas returned.
    #[error("program failure: {0}")]
    Failure(&'static str),
}

impl HostError for Escape {}

type HostResult<T = ()> = Result<T, wasmi::Error>;

fn fail(reason: &'static str) -> wasmi::Error {
    wasmi::Error::host(Escape::Failure(reason))
}

// ----- ink ------------------------------------------------------------------------------------

fn ink_left(caller: &Caller<'_, Ctx>) -> u64 {
    caller.get_fuel().expect("fuel metering is enabled") * INK_PER_FUEL
}

fn gas_left(caller: &Caller<'_, Ctx>) -> u64 {
    ink_left(caller) / INK_PRICE
}

/// Buys `ink`; running out consumes everything.
fn buy_ink(caller: &mut Caller<'_, Ctx>, ink: u64) -> HostResult {
    let fuel = caller.get_fuel().expect("fuel metering is enabled");
    let need = ink.div_ceil(INK_PER_FUEL);
    if need > fuel {
        caller.set_fuel(0).expect("fuel metering is enabled");
        return Err(wasmi::Error::host(Escape::OutOfInk));
    }
    caller
        .set_fuel(fuel - need)
        .expect("fuel metering is enabled");
    Ok(())
}

fn buy_gas(caller: &mut Caller<'_, Ctx>, gas: u64) -> HostResult {
    buy_ink(caller, gas.saturating_mul(INK_PRICE))
}

/// Fails with out-of-ink unless `gas` is left (nitro's `require_gas`, e.g. the SSTORE sentry).
fn require_gas(caller: &mut Caller<'_, Ctx>, gas: u64) -> HostResult {
    if gas_left(caller) < gas {
        caller.set_fuel(0).expect("fuel metering is enabled");
        return Err(wasmi::Error::host(Escape::OutOfInk));
    }
    Ok(())
}

fn give_back_gas(caller: &mut Caller<'_, Ctx>, gas: u64) {
    let fuel = caller.get_fuel().expect("fuel metering is enabled");
    let add = gas.saturating_mul(INK_PRICE) / INK_PER_FUEL;
    caller
        .set_fuel(fuel.saturating_add(add))
        .expect("fuel metering is enabled");
}

/// Charges for pages grown by `memory.grow` since the last settlement.
pub(crate) fn settle_memory_growth(store: &mut Store<Ctx>) -> HostResult {
    let pages = std::mem::take(&mut store.data_mut().limiter.unpaid_pages);
    if pages == 0 {
        return Ok(());
    }
    let gas = open_pages(store.data_mut(), pages);
    let fuel = store.get_fuel().expect("fuel metering is enabled");
    let need = gas.saturating_mul(INK_PRICE).div_ceil(INK_PER_FUEL);
    if need > fuel {
        store.set_fuel(0).expect("fuel metering is enabled");
        return Err(wasmi::Error::host(Escape::OutOfInk));
    }
    store
        .set_fuel(fuel - need)
        .expect("fuel metering is enabled");
    Ok(())
}

/// Records `pages` more open pages in the tx and returns their gas.
fn open_pages(ctx: &mut Ctx, pages: u16) -> u64 {
    ctx.frame.open_pages = ctx.frame.open_pages.saturating_add(pages);
    let world = ctx.world();
    let gas = meter::memory_gas(pages, world.open_pages, world.ever_pages);
    world.open_pages = world.open_pages.saturating_add(pages);
    world.ever_pages = world.ever_pages.max(world.open_pages);
    gas
}

fn settle_in_hostio(caller: &mut Caller<'_, Ctx>) -> HostResult {
    let pages = std::mem::take(&mut caller.data_mut().limiter.unpaid_pages);
    if pages > 0 {
        let gas = open_pages(caller.data_mut(), pages);
        buy_gas(caller, gas)?;
    }
    Ok(())
}

// ----- memory -----------------------------------------------------------------------------------

fn memory(caller: &Caller<'_, Ctx>) -> HostResult<Memory> {
    caller
        .data()
        .memory
        .ok_or_else(|| fail("program has no memory"))
}

fn read_bytes(caller: &Caller<'_, Ctx>, ptr: u32, len: u32) -> HostResult<Vec<u8>> {
    let mem = memory(caller)?;
    let data = mem.data(caller);
    let start = ptr as usize;
    let end = start
        .checked_add(len as usize)
        .ok_or_else(|| fail("pointer overflow"))?;
    data.get(start..end)
        .map(<[u8]>::to_vec)
        .ok_or_else(|| fail("read out of bounds"))
}

fn read_fixed<const N: usize>(caller: &Caller<'_, Ctx>, ptr: u32) -> HostResult<[u8; N]> {
    let mem = memory(caller)?;
    let data = mem.data(caller);
    let start = ptr as usize;
    data.get(start..start + N)
        .map(|s| s.try_into().expect("length is N"))
        .ok_or_else(|| fail("read out of bounds"))
}

fn read_b256(caller: &Caller<'_, Ctx>, ptr: u32) -> HostResult<B256> {
    read_fixed::<32>(caller, ptr).map(B256::from)
}

fn read_u256(caller: &Caller<'_, Ctx>, ptr: u32) -> HostResult<U256> {
    read_fixed::<32>(caller, ptr).map(U256::from_be_bytes)
}

fn read_address(caller: &Caller<'_, Ctx>, ptr: u32) -> HostResult<Address> {
    read_fixed::<20>(caller, ptr).map(Address::from)
}

fn write_bytes(caller: &mut Caller<'_, Ctx>, ptr: u32, bytes: &[u8]) -> HostResult {
    let mem = memory(caller)?;
    let data = mem.data_mut(caller);
    let start = ptr as usize;
    data.get_mut(start..start + bytes.len())
        .ok_or_else(|| fail("write out of bounds"))?
        .copy_from_slice(bytes);
    Ok(())
}

fn write_u32(caller: &mut Caller<'_, Ctx>, ptr: u32, value: u32) -> HostResult {
    write_bytes(caller, ptr, &value.to_le_bytes())
}

// ----- the linker -------------------------------------------------------------------------------

/// A linker with all 42 `vm_hooks` functions.
pub(crate) fn linker(engine: &Engine) -> Linker<Ctx> {
    let mut l = Linker::new(engine);
    macro_rules! hook {
        ($($name:ident),* $(,)?) => {
            $( l.func_wrap("vm_hooks", stringify!($name), $name)
                .expect("each hostio is defined once"); )*
        };
    }
    hook!(
        read_args,
        write_result,
        exit_early,
        storage_load_bytes32,
        storage_cache_bytes32,
        storage_flush_cache,
        transient_load_bytes32,
        transient_store_bytes32,
        call_contract,
        delegate_call_contract,
        static_call_contract,
        create1,
        create2,
        read_return_data,
        return_data_size,
        emit_log,
        account_balance,
        account_code,
        account_code_size,
        account_codehash,
        evm_gas_left,
        evm_ink_left,
        block_basefee,
        chainid,
        block_coinbase,
        block_gas_limit,
        block_number,
        block_timestamp,
        contract_address,
        math_div,
        math_mod,
        math_pow,
        math_add_mod,
        math_mul_mod,
        msg_reentrant,
        msg_sender,
        msg_value,
        native_keccak256,
        tx_gas_price,
        tx_ink_price,
        tx_origin,
        pay_for_memory_grow,
    );
    l
}

// ----- args, result, exit -----------------------------------------------------------------------

fn read_args(mut caller: Caller<'_, Ctx>, dest: u32) -> HostResult {
    let args = caller.data().frame.msg.input.clone();
    buy_ink(&mut caller, HOSTIO_INK + write_ink(args.len()))?;
    write_bytes(&mut caller, dest, &args)
}

fn write_result(mut caller: Caller<'_, Ctx>, ptr: u32, len: u32) -> HostResult {
    buy_ink(&mut caller, HOSTIO_INK + 2 * read_ink(len as usize))?;
    let data = read_bytes(&caller, ptr, len)?;
    caller.data_mut().frame.result = data;
    Ok(())
}

fn exit_early(_caller: Caller<'_, Ctx>, status: u32) -> HostResult {
    Err(wasmi::Error::host(Escape::Exit(status)))
}

// ----- storage --------------------------------------------------------------------------------

fn storage_load_bytes32(mut caller: Caller<'_, Ctx>, key: u32, dest: u32) -> HostResult {
    buy_ink(&mut caller, STORAGE_HOSTIO_INK)?;
    require_gas(&mut caller, COLD_SLOAD_GAS + 10)?;
    let slot = read_b256(&caller, key)?;
    let value = match caller.data().frame.cache.get(&slot) {
        Some(cached) => cached.value,
        None => {
            let address = caller.data().frame.msg.address;
            let world = caller.data_mut().world();
            let cold = world.state.warm_slot(address, slot);
            let value = world.state.storage(address, slot);
            buy_gas(
                &mut caller,
                if cold {
                    COLD_SLOAD_GAS
                } else {
                    WARM_ACCESS_GAS
                },
            )?;
            caller.data_mut().frame.cache.insert(
                slot,
                CachedSlot {
                    value,
                    dirty: false,
                },
            );
            value
        }
    };
    write_bytes(&mut caller, dest, value.as_slice())
}

fn storage_cache_bytes32(mut caller: Caller<'_, Ctx>, key: u32, value: u32) -> HostResult {
    buy_ink(&mut caller, STORAGE_HOSTIO_INK)?;
    require_gas(&mut caller, SSTORE_SENTRY_GAS + 10)?;
    let slot = read_b256(&caller, key)?;
    let value = read_b256(&caller, value)?;
    caller
        .data_mut()
        .frame
        .cache
        .insert(slot, CachedSlot { value, dirty: true });
    Ok(())
}

fn storage_flush_cache(mut caller: Caller<'_, Ctx>, clear: u32) -> HostResult {
    buy_ink(&mut caller, HOSTIO_INK + EVM_API_INK)?;
    require_gas(&mut caller, SSTORE_SENTRY_GAS)?;
    flush(&mut caller, clear != 0)
}

/// Writes the dirty slots (SSTORE pricing per slot, in slot order for determinism).
fn flush(caller: &mut Caller<'_, Ctx>, clear: bool) -> HostResult {
    let mut dirty: Vec<(B256, B256)> = caller
        .data()
        .frame
        .cache
        .iter()
        .filter(|(_, c)| c.dirty)
        .map(|(k, c)| (*k, c.value))
        .collect();
    dirty.sort_unstable_by_key(|(k, _)| *k);
    // Only an actual write is a violation: the SDK flushes after every call, views included,
    // and nitro refuses only when there are dirty slots to persist.
    if !dirty.is_empty() && caller.data().frame.msg.is_static {
        return Err(fail("storage write in a static context"));
    }
    let address = caller.data().frame.msg.address;
    for (slot, value) in dirty {
        require_gas(caller, SSTORE_SENTRY_GAS)?;
        let world = caller.data_mut().world();
        let cold = world.state.warm_slot(address, slot);
        let current = world.state.storage(address, slot);
        let original = world.state.original_storage(address, slot);
        let (mut gas, refund) = meter::sstore_cost(original.0, current.0, value.0);
        if cold {
            gas += COLD_SLOAD_GAS;
        }
        buy_gas(caller, gas)?;
        let world = caller.data_mut().world();
        world.state.set_storage(address, slot, value);
        world.state.add_refund(refund);
        if let Some(c) = caller.data_mut().frame.cache.get_mut(&slot) {
            c.dirty = false;
        }
    }
    if clear {
        caller.data_mut().frame.cache.clear();
    }
    Ok(())
}

fn transient_load_bytes32(mut caller: Caller<'_, Ctx>, key: u32, dest: u32) -> HostResult {
    buy_ink(&mut caller, HOSTIO_INK + 2 * PTR_INK + EVM_API_INK)?;
    buy_gas(&mut caller, TLOAD_GAS)?;
    let slot = read_b256(&caller, key)?;
    let address = caller.data().frame.msg.address;
    let value = caller.data_mut().world().state.transient(address, slot);
    write_bytes(&mut caller, dest, value.as_slice())
}

fn transient_store_bytes32(mut caller: Caller<'_, Ctx>, key: u32, value: u32) -> HostResult {
    buy_ink(&mut caller, HOSTIO_INK + 2 * PTR_INK + EVM_API_INK)?;
    buy_gas(&mut caller, TSTORE_GAS)?;
    if caller.data().frame.msg.is_static {
        return Err(fail("transient store in a static context"));
    }
    let slot = read_b256(&caller, key)?;
    let value = read_b256(&caller, value)?;
    let address = caller.data().frame.msg.address;
    caller
        .data_mut()
        .world()
        .state
        .set_transient(address, slot, value);
    Ok(())
}

// ----- calls ------------------------------------------------------------------------------------

#[allow(clippy::too_many_arguments)]
fn do_call(
    caller: &mut Caller<'_, Ctx>,
    kind: CallKind,
    addr: u32,
    data: u32,
    len: u32,
    value: Option<u32>,
    gas_limit: u64,
    ret_len: u32,
) -> HostResult<u32> {
    buy_ink(caller, CALL_HOSTIO_INK + 2 * read_ink(len as usize))?;
    settle_in_hostio(caller)?;
    let target = read_address(caller, addr)?;
    let input = Bytes::from(read_bytes(caller, data, len)?);
    let value = match value {
        Some(ptr) => read_u256(caller, ptr)?,
        None => U256::ZERO,
    };
    let frame = &caller.data().frame.msg;
    if kind == CallKind::Call && !value.is_zero() && frame.is_static {
        return Err(fail("value transfer in a static context"));
    }
    let (me, my_caller, my_value, depth, is_static) = (
        frame.address,
        frame.caller,
        frame.value,
        frame.depth,
        frame.is_static,
    );

    // EIP-2929 access, value transfer and account creation (EIP-150 style).
    let world = caller.data_mut().world();
    let mut gas = if world.state.warm_account(target) {
        COLD_ACCOUNT_GAS
    } else {
        WARM_ACCESS_GAS
    };
    if !value.is_zero() {
        gas += CALL_VALUE_GAS;
        let empty = world.state.account(target).is_none_or(|a| a.is_empty());
        if empty {
            gas += NEW_ACCOUNT_GAS;
        }
    }
    buy_gas(caller, gas)?;

    // 63/64 rule: the callee gets at most all but one 64th of what is left.
    let available = gas_left(caller);
    let mut callee_gas = gas_limit.min(available - available / 64);
    buy_gas(caller, callee_gas)?;
    if !value.is_zero() {
        callee_gas += CALL_STIPEND;
    }

    let msg = match kind {
        CallKind::StaticCall => Message {
            kind,
            caller: me,
            address: target,
            code_address: target,
            value: U256::ZERO,
            transfer: U256::ZERO,
            input,
            gas: callee_gas,
            is_static: true,
            depth: depth + 1,
        },
        CallKind::DelegateCall => Message {
            kind,
            caller: my_caller,
            address: me,
            code_address: target,
            value: my_value,
            transfer: U256::ZERO,
            input,
            gas: callee_gas,
            is_static,
            depth: depth + 1,
        },
        // Stylus programs make only these three kinds of call.
        _ => Message {
            kind,
            caller: me,
            address: target,
            code_address: target,
            value,
            transfer: value,
            input,
            gas: callee_gas,
            is_static,
            depth: depth + 1,
        },
    };
    let world = caller.data_mut().world.take().expect("world present");
    let (world, result) = world.call(msg);
    caller.data_mut().world = Some(world);

    // As in the EVM, whatever the callee left (stipend included) goes back to the caller.
    give_back_gas(caller, result.gas_left);
    let out_len = result.output.len() as u32;
    caller.data_mut().frame.return_data = result.output;
    write_u32(caller, ret_len, out_len)?;
    Ok(match result.status {
        CallStatus::Success => 0,
        // Nitro reports every failure as status 2.
        CallStatus::Revert | CallStatus::OutOfGas | CallStatus::Halt(_) => 2,
    })
}

fn call_contract(
    mut caller: Caller<'_, Ctx>,
    addr: u32,
    data: u32,
    len: u32,
    value: u32,
    gas: u64,
    ret_len: u32,
) -> HostResult<u32> {
    do_call(
        &mut caller,
        CallKind::Call,
        addr,
        data,
        len,
        Some(value),
        gas,
        ret_len,
    )
}

fn delegate_call_contract(
    mut caller: Caller<'_, Ctx>,
    addr: u32,
    data: u32,
    len: u32,
    gas: u64,
    ret_len: u32,
) -> HostResult<u32> {
    do_call(
        &mut caller,
        CallKind::DelegateCall,
        addr,
        data,
        len,
        None,
        gas,
        ret_len,
    )
}

fn static_call_contract(
    mut caller: Caller<'_, Ctx>,
    addr: u32,
    data: u32,
    len: u32,
    gas: u64,
    ret_len: u32,
) -> HostResult<u32> {
    do_call(
        &mut caller,
        CallKind::StaticCall,
        addr,
        data,
        len,
        None,
        gas,
        ret_len,
    )
}

// ----- creation ---------------------------------------------------------------------------------

fn create1(
    mut caller: Caller<'_, Ctx>,
    code: u32,
    code_len: u32,
    endowment: u32,
    addr_out: u32,
    revert_len_out: u32,
) -> HostResult {
    buy_ink(
        &mut caller,
        HOSTIO_INK + 3 * PTR_INK + EVM_API_INK + 2 * read_ink(code_len as usize),
    )?;
    do_create(
        &mut caller,
        code,
        code_len,
        endowment,
        None,
        addr_out,
        revert_len_out,
    )
}

#[allow(clippy::too_many_arguments)]
fn create2(
    mut caller: Caller<'_, Ctx>,
    code: u32,
    code_len: u32,
    endowment: u32,
    salt: u32,
    addr_out: u32,
    revert_len_out: u32,
) -> HostResult {
    buy_ink(
        &mut caller,
        HOSTIO_INK + 4 * PTR_INK + EVM_API_INK + 2 * read_ink(code_len as usize),
    )?;
    let salt = read_b256(&caller, salt)?;
    do_create(
        &mut caller,
        code,
        code_len,
        endowment,
        Some(salt),
        addr_out,
        revert_len_out,
    )
}

fn do_create(
    caller: &mut Caller<'_, Ctx>,
    code: u32,
    code_len: u32,
    endowment: u32,
    salt: Option<B256>,
    addr_out: u32,
    revert_len_out: u32,
) -> HostResult {
    if caller.data().frame.msg.is_static {
        return Err(fail("create in a static context"));
    }
    settle_in_hostio(caller)?;
    let initcode = read_bytes(caller, code, code_len)?;
    let value = read_u256(caller, endowment)?;
    let mut gas = CREATE_GAS;
    if salt.is_some() {
        gas += KECCAK_WORD_GAS * (initcode.len() as u64).div_ceil(32);
    }
    buy_gas(caller, gas)?;
    // All but one 64th goes to the initcode.
    let available = gas_left(caller);
    let child_gas = available - available / 64;
    buy_gas(caller, child_gas)?;

    let (me, depth) = {
        let m = &caller.data().frame.msg;
        (m.address, m.depth)
    };
    let world = caller.data_mut().world.take().expect("world present");
    let (world, result) = on_enough_stack(|| {
        crate::create::create(world, me, value, initcode, salt, child_gas, depth)
    });
    caller.data_mut().world = Some(world);
    give_back_gas(caller, result.gas_left);

    match result.address {
        Some(address) => {
            caller.data_mut().frame.return_data = Bytes::new();
            write_bytes(caller, addr_out, address.as_slice())?;
            write_u32(caller, revert_len_out, 0)
        }
        None => {
            let len = result.revert_data.len() as u32;
            caller.data_mut().frame.return_data = result.revert_data;
            write_bytes(caller, addr_out, Address::ZERO.as_slice())?;
            write_u32(caller, revert_len_out, len)
        }
    }
}

// ----- return data ------------------------------------------------------------------------------

fn read_return_data(
    mut caller: Caller<'_, Ctx>,
    dest: u32,
    offset: u32,
    size: u32,
) -> HostResult<u32> {
    let data = caller.data().frame.return_data.clone();
    let start = (offset as usize).min(data.len());
    let end = start.saturating_add(size as usize).min(data.len());
    let slice = &data[start..end];
    buy_ink(
        &mut caller,
        HOSTIO_INK + EVM_API_INK + write_ink(slice.len()),
    )?;
    write_bytes(&mut caller, dest, slice)?;
    Ok(slice.len() as u32)
}

fn return_data_size(mut caller: Caller<'_, Ctx>) -> HostResult<u32> {
    buy_ink(&mut caller, HOSTIO_INK)?;
    Ok(caller.data().frame.return_data.len() as u32)
}

// ----- logs -------------------------------------------------------------------------------------

fn emit_log(mut caller: Caller<'_, Ctx>, data: u32, len: u32, topics: u32) -> HostResult {
    buy_ink(
        &mut caller,
        HOSTIO_INK + EVM_API_INK + read_ink(len as usize),
    )?;
    if topics > 4 || len < topics * 32 {
        return Err(fail("bad log"));
    }
    if caller.data().frame.msg.is_static {
        return Err(fail("log in a static context"));
    }
    let bytes = read_bytes(&caller, data, len)?;
    let data_len = bytes.len() as u64 - topics as u64 * 32;
    buy_gas(
        &mut caller,
        LOG_GAS + LOG_TOPIC_GAS * topics as u64 + LOG_DATA_GAS * data_len,
    )?;
    let (topic_bytes, payload) = bytes.split_at(topics as usize * 32);
    let address = caller.data().frame.msg.address;
    caller.data_mut().world().state.push_log(Log {
        address,
        topics: topic_bytes.chunks(32).map(B256::from_slice).collect(),
        data: Bytes::copy_from_slice(payload),
    });
    Ok(())
}

// ----- accounts ---------------------------------------------------------------------------------

/// EIP-2929 account access gas.
fn access_account(caller: &mut Caller<'_, Ctx>, address: Address) -> HostResult {
    let cold = caller.data_mut().world().state.warm_account(address);
    buy_gas(
        caller,
        if cold {
            COLD_ACCOUNT_GAS
        } else {
            WARM_ACCESS_GAS
        },
    )
}

fn account_balance(mut caller: Caller<'_, Ctx>, addr: u32, dest: u32) -> HostResult {
    buy_ink(&mut caller, HOSTIO_INK + 2 * PTR_INK + EVM_API_INK)?;
    require_gas(&mut caller, COLD_ACCOUNT_GAS)?;
    let address = read_address(&caller, addr)?;
    access_account(&mut caller, address)?;
    let balance = caller.data_mut().world().state.balance(address);
    write_bytes(&mut caller, dest, &balance.to_be_bytes::<32>())
}

fn account_code(
    mut caller: Caller<'_, Ctx>,
    addr: u32,
    offset: u32,
    size: u32,
    dest: u32,
) -> HostResult<u32> {
    let address = read_address(&caller, addr)?;
    let code = caller.data_mut().world().state.code(address);
    let start = (offset as usize).min(code.len());
    let end = start.saturating_add(size as usize).min(code.len());
    buy_ink(
        &mut caller,
        HOSTIO_INK + EVM_API_INK + write_ink(end - start),
    )?;
    access_account(&mut caller, address)?;
    write_bytes(&mut caller, dest, &code[start..end])?;
    Ok((end - start) as u32)
}

fn account_code_size(mut caller: Caller<'_, Ctx>, addr: u32) -> HostResult<u32> {
    buy_ink(&mut caller, HOSTIO_INK + EVM_API_INK)?;
    let address = read_address(&caller, addr)?;
    access_account(&mut caller, address)?;
    Ok(caller.data_mut().world().state.code(address).len() as u32)
}

fn account_codehash(mut caller: Caller<'_, Ctx>, addr: u32, dest: u32) -> HostResult {
    buy_ink(&mut caller, HOSTIO_INK + 2 * PTR_INK + EVM_API_INK)?;
    let address = read_address(&caller, addr)?;
    access_account(&mut caller, address)?;
    let hash = caller.data_mut().world().state.code_hash(address);
    write_bytes(&mut caller, dest, hash.as_slice())
}

// ----- metering ---------------------------------------------------------------------------------

fn evm_gas_left(mut caller: Caller<'_, Ctx>) -> HostResult<u64> {
    buy_ink(&mut caller, HOSTIO_INK)?;
    Ok(gas_left(&caller))
}

fn evm_ink_left(mut caller: Caller<'_, Ctx>) -> HostResult<u64> {
    buy_ink(&mut caller, HOSTIO_INK)?;
    Ok(ink_left(&caller))
}

fn tx_ink_price(mut caller: Caller<'_, Ctx>) -> HostResult<u32> {
    buy_ink(&mut caller, HOSTIO_INK)?;
    Ok(INK_PRICE as u32)
}

fn pay_for_memory_grow(mut caller: Caller<'_, Ctx>, pages: u32) -> HostResult {
    buy_ink(&mut caller, HOSTIO_INK)?;
    if pages == 0 {
        return Ok(());
    }
    let pages = u16::try_from(pages).map_err(|_| fail("too many pages"))?;
    let gas = open_pages(caller.data_mut(), pages);
    buy_gas(&mut caller, gas)
}

// ----- block, tx, message -----------------------------------------------------------------------

fn block_basefee(mut caller: Caller<'_, Ctx>, dest: u32) -> HostResult {
    buy_ink(&mut caller, HOSTIO_INK + PTR_INK)?;
    let v = caller.data_mut().world().block.basefee;
    write_bytes(&mut caller, dest, &v.to_be_bytes::<32>())
}

fn chainid(mut caller: Caller<'_, Ctx>) -> HostResult<u64> {
    buy_ink(&mut caller, HOSTIO_INK)?;
    Ok(caller.data_mut().world().block.chain_id)
}

fn block_coinbase(mut caller: Caller<'_, Ctx>, dest: u32) -> HostResult {
    buy_ink(&mut caller, HOSTIO_INK + PTR_INK)?;
    let v = caller.data_mut().world().block.coinbase;
    write_bytes(&mut caller, dest, v.as_slice())
}

fn block_gas_limit(mut caller: Caller<'_, Ctx>) -> HostResult<u64> {
    buy_ink(&mut caller, HOSTIO_INK)?;
    Ok(caller.data_mut().world().block.gas_limit)
}

fn block_number(mut caller: Caller<'_, Ctx>) -> HostResult<u64> {
    buy_ink(&mut caller, HOSTIO_INK)?;
    Ok(caller.data_mut().world().block.number)
}

fn block_timestamp(mut caller: Caller<'_, Ctx>) -> HostResult<u64> {
    buy_ink(&mut caller, HOSTIO_INK)?;
    Ok(caller.data_mut().world().block.timestamp)
}

fn contract_address(mut caller: Caller<'_, Ctx>, dest: u32) -> HostResult {
    buy_ink(&mut caller, HOSTIO_INK + PTR_INK)?;
    let v = caller.data().frame.msg.address;
    write_bytes(&mut caller, dest, v.as_slice())
}

fn msg_reentrant(mut caller: Caller<'_, Ctx>) -> HostResult<u32> {
    buy_ink(&mut caller, HOSTIO_INK)?;
    let address = caller.data().frame.msg.address;
    let open = caller
        .data_mut()
        .world()
        .open_frames
        .get(&address)
        .copied()
        .unwrap_or(0);
    Ok(u32::from(open > 1))
}

fn msg_sender(mut caller: Caller<'_, Ctx>, dest: u32) -> HostResult {
    buy_ink(&mut caller, HOSTIO_INK + PTR_INK)?;
    let v = caller.data().frame.msg.caller;
    write_bytes(&mut caller, dest, v.as_slice())
}

fn msg_value(mut caller: Caller<'_, Ctx>, dest: u32) -> HostResult {
    buy_ink(&mut caller, HOSTIO_INK + PTR_INK)?;
    let v = caller.data().frame.msg.value;
    write_bytes(&mut caller, dest, &v.to_be_bytes::<32>())
}

fn tx_gas_price(mut caller: Caller<'_, Ctx>, dest: u32) -> HostResult {
    buy_ink(&mut caller, HOSTIO_INK + PTR_INK)?;
    let v = caller.data_mut().world().tx.gas_price;
    write_bytes(&mut caller, dest, &v.to_be_bytes::<32>())
}

fn tx_origin(mut caller: Caller<'_, Ctx>, dest: u32) -> HostResult {
    buy_ink(&mut caller, HOSTIO_INK + PTR_INK)?;
    let v = caller.data_mut().world().tx.origin;
    write_bytes(&mut caller, dest, v.as_slice())
}

fn native_keccak256(mut caller: Caller<'_, Ctx>, input: u32, len: u32, out: u32) -> HostResult {
    buy_ink(&mut caller, keccak_ink(len as usize))?;
    let data = read_bytes(&caller, input, len)?;
    write_bytes(&mut caller, out, keccak256(&data).as_slice())
}

// ----- math -------------------------------------------------------------------------------------

/// Applies `op` to the words at `ptrs`, writing the result over the first.
fn math<const N: usize>(
    caller: &mut Caller<'_, Ctx>,
    ink: u64,
    ptrs: [u32; N],
    op: impl FnOnce([U256; N]) -> U256,
) -> HostResult {
    buy_ink(caller, ink)?;
    let mut words = [U256::ZERO; N];
    for (w, p) in words.iter_mut().zip(ptrs) {
        *w = read_u256(caller, p)?;
    }
    let result = op(words);
    write_bytes(caller, ptrs[0], &result.to_be_bytes::<32>())
}

fn math_div(mut caller: Caller<'_, Ctx>, value: u32, divisor: u32) -> HostResult {
    math(
        &mut caller,
        HOSTIO_INK + 3 * PTR_INK + DIV_INK,
        [value, divisor],
        |[a, b]| a.checked_div(b).unwrap_or_default(),
    )
}

fn math_mod(mut caller: Caller<'_, Ctx>, value: u32, modulus: u32) -> HostResult {
    math(
        &mut caller,
        HOSTIO_INK + 3 * PTR_INK + DIV_INK,
        [value, modulus],
        |[a, b]| a.checked_rem(b).unwrap_or_default(),
    )
}

fn math_pow(mut caller: Caller<'_, Ctx>, value: u32, exponent: u32) -> HostResult {
    let exp = read_fixed::<32>(&caller, exponent)?;
    math(
        &mut caller,
        HOSTIO_INK + 3 * PTR_INK + pow_ink(&exp),
        [value, exponent],
        |[a, b]| a.wrapping_pow(b),
    )
}

fn math_add_mod(mut caller: Caller<'_, Ctx>, value: u32, addend: u32, modulus: u32) -> HostResult {
    math(
        &mut caller,
        HOSTIO_INK + 4 * PTR_INK + ADD_MOD_INK,
        [value, addend, modulus],
        |[a, b, m]| {
            if m.is_zero() {
                U256::ZERO
            } else {
                a.add_mod(b, m)
            }
        },
    )
}

fn math_mul_mod(
    mut caller: Caller<'_, Ctx>,
    value: u32,
    multiplier: u32,
    modulus: u32,
) -> HostResult {
    math(
        &mut caller,
        HOSTIO_INK + 4 * PTR_INK + MUL_MOD_INK,
        [value, multiplier, modulus],
        |[a, b, m]| {
            if m.is_zero() {
                U256::ZERO
            } else {
                a.mul_mod(b, m)
            }
        },
    )
}
