//! Running what is not mined: `eth_call`, `eth_estimateGas` and `debug_trace*` replays.

use super::*;
use alloy_eips::eip2930::{AccessList, AccessListItem};

/// A replayed transaction: as mined, its receipt now, its call frames.
type Replayed = (Arc<MinedTx>, Option<Receipt>, Vec<CallFrame>);

impl Chain {
    /// The call tree of mined transaction `hash` (`debug_traceTransaction` with `callTracer`):
    /// the transactions before it in its block are replayed on the state before the block,
    /// then it runs with the tracer. The outermost frame carries the transaction's gas limit and
    /// `gasUsed`, as geth's does.
    pub fn trace_transaction(&mut self, hash: B256) -> Result<CallFrame, TraceError> {
        let (target, receipt, mut frames) = self.replay(hash, |_| {})?;
        let env = &target.envelope;
        let gas_used = receipt.map_or(target.receipt.gas_used, |r| r.gas_used);
        let mut root = match frames.len() {
            1 => frames.remove(0),
            // A creation that failed before its initcode ran (no frame): build its frame.
            _ => {
                let mut root = CallFrame {
                    kind: "CREATE",
                    from: target.from,
                    to: target.receipt.contract_address,
                    value: Some(env.value()),
                    gas: U64::ZERO,
                    gas_used: U64::ZERO,
                    input: env.input().clone(),
                    output: None,
                    error: None,
                    revert_reason: None,
                    calls: frames,
                };
                let status = if target.receipt.status {
                    CallStatus::Success
                } else {
                    CallStatus::Revert
                };
                root.finish(status, target.receipt.revert_data.clone(), 0);
                root
            }
        };
        root.from = target.from;
        root.gas = U64::from(env.gas_limit());
        root.gas_used = U64::from(gas_used);
        Ok(root)
    }

    /// geth's opcode trace of mined transaction `hash` (`debug_traceTransaction` with the
    /// default tracer), replayed as [`Chain::trace_transaction`] replays it.
    pub fn struct_log_transaction(
        &mut self,
        hash: B256,
        config: StructLogConfig,
    ) -> Result<OpcodeTrace, TraceError> {
        let (target, receipt, frames) = self.replay(hash, |exec| exec.start_struct_log(config))?;
        let logs = self.exec.take_struct_log();
        let receipt = receipt.unwrap_or_else(|| target.receipt.clone());
        let output = frames.into_iter().next().and_then(|f| f.output);
        Ok(OpcodeTrace {
            gas: receipt.gas_used,
            failed: !receipt.status,
            return_value: output.unwrap_or_default(),
            struct_logs: logs,
        })
    }

    /// Replays mined transaction `hash` on the state before its block — the transactions
    /// before it first, then it with the call tracer and whatever `install` adds — and returns
    /// it, its new receipt and its call frames.
    fn replay(
        &mut self,
        hash: B256,
        install: impl FnOnce(&mut Executor),
    ) -> Result<Replayed, TraceError> {
        let target = self
            .view
            .txs
            .get(&hash)
            .ok_or(TraceError::NotFound(hash))?
            .clone();
        let n = target.block_number;
        let base = n
            .checked_sub(1)
            .and_then(|p| self.view.history.get(p))
            .cloned()
            .ok_or(TraceError::NoState(n))?;
        let block = self.view.blocks[n as usize].clone();
        let earlier: Vec<PendingTx> = block.transactions[..target.index as usize]
            .iter()
            .map(|h| {
                let t = self
                    .view
                    .txs
                    .get(h)
                    .expect("the block's transactions are mined");
                PendingTx {
                    envelope: t.envelope.clone(),
                    hash: t.hash,
                    from: t.from,
                }
            })
            .collect();

        // Replay in the block's own environment (its base fee included, which `execute` reads).
        let base_fee = block
            .header
            .base_fee_per_gas
            .unwrap_or(self.view.config.base_fee);
        let set_env = |b: &mut BlockEnv| {
            b.number = n;
            b.timestamp = block.header.timestamp;
            b.basefee = U256::from(base_fee);
        };
        let target_tx = PendingTx {
            envelope: target.envelope.clone(),
            hash,
            from: target.from,
        };
        let (receipt, frames) = self.on_state(base, set_env, |chain| {
            for tx in &earlier {
                chain.execute(tx);
            }
            chain.exec.start_trace();
            install(&mut chain.exec);
            let receipt = chain.execute(&target_tx);
            (receipt, chain.exec.take_trace())
        });
        Ok((target, receipt, frames))
    }

    /// geth's opcode trace of a simulated call (`debug_traceCall` with the default tracer).
    pub fn struct_log_call(
        &mut self,
        req: &CallRequest,
        at: Option<u64>,
        config: StructLogConfig,
    ) -> OpcodeTrace {
        self.exec.start_struct_log(config);
        let out = self.simulate(req, at, |_| {});
        OpcodeTrace {
            gas: out.gas_used,
            failed: !out.success,
            return_value: out.output,
            struct_logs: self.exec.take_struct_log(),
        }
    }

    /// The call tree of a simulated call (`debug_traceCall` with `callTracer`), on the state
    /// of block `at` (the head if `None`), as [`Chain::simulate`] runs it.
    pub fn trace_call(&mut self, req: &CallRequest, at: Option<u64>) -> Option<CallFrame> {
        self.exec.start_trace();
        let out = self.simulate(req, at, |_| {});
        let mut root = self.exec.take_trace().into_iter().next()?;
        root.gas = U64::from(req.gas.unwrap_or(self.view.config.block_gas_limit));
        root.gas_used = U64::from(out.gas_used);
        Some(root)
    }

    /// Runs `req` against the state after block `number` (or the current state) with
    /// `state_override` applied first, and leaves nothing behind. An earlier block's state is
    /// read in that block's environment (its number and time, as geth does), so a view that
    /// depends on the time answers as it did then; the current state in the next block's
    /// environment (what a transaction sent now would see). No nonce, fee or balance-for-gas
    /// checks (as `eth_call`); the gas limit defaults to the block gas limit.
    pub fn simulate(
        &mut self,
        req: &CallRequest,
        at: Option<u64>,
        state_override: impl FnOnce(&mut State),
    ) -> SimOutcome {
        self.simulate_then(req, at, state_override, |_| ()).0
    }

    /// `eth_createAccessList`: the accounts and storage slots `req` touches, run as
    /// [`Chain::simulate`] runs it, and the outcome with that list sent along. As geth, the list
    /// names what code reached, in frames that reverted too; it leaves out the sender, the
    /// recipient (or created address) unless slots of it are read, and the precompiles (ArbOS's
    /// too); it starts from `req`'s own list and runs again with each larger list until nothing
    /// new is touched (a list can change the path a call takes). Stylus programs' storage
    /// reads count as the EVM's do.
    pub fn create_access_list(
        &mut self,
        req: &CallRequest,
        at: Option<u64>,
        state_override: impl Fn(&mut State),
    ) -> (AccessList, SimOutcome) {
        let from = req.from.unwrap_or_default();
        let to = req.to.unwrap_or_else(|| {
            let nonce = match at {
                Some(n) if n != self.block_number() => {
                    self.view.history.get(n).map_or(0, |s| s.nonce(from))
                }
                _ => self.exec.state().nonce(from),
            };
            from.create(nonce)
        });
        let skip = [from, to];
        let mut req = req.clone();
        // Each round only adds entries, so this ends; the bound is for pathological code.
        for _ in 0..16 {
            let (out, list) =
                self.simulate_then(&req, at, &state_override, |state| touched(state, &skip));
            if list == req.access_list {
                return (list, out);
            }
            req.access_list = list;
        }
        let out = self.simulate(&req, at, &state_override);
        (req.access_list, out)
    }

    /// [`Chain::simulate`], with `read` looking at the state the message left before it is
    /// thrown away.
    fn simulate_then<R>(
        &mut self,
        req: &CallRequest,
        at: Option<u64>,
        state_override: impl FnOnce(&mut State),
        read: impl FnOnce(&State) -> R,
    ) -> (SimOutcome, R) {
        let mut env = (self.block_number() + 1, self.next_block_timestamp());
        let mut base = match at {
            Some(n) if n != self.block_number() => match self.view.history.get(n) {
                Some(s) => {
                    if let Some(block) = self.view.block_by_number(n) {
                        env = (n, block.header.timestamp);
                    }
                    s.clone()
                }
                None => self.exec.state().clone(),
            },
            _ => self.exec.state().clone(),
        };
        state_override(&mut base);
        let (number, timestamp) = env;
        let set_env = |b: &mut BlockEnv| {
            b.number = number;
            b.timestamp = timestamp;
        };
        self.on_state(base, set_env, |chain| {
            let out = chain.run_simulated(req);
            let read = read(chain.exec.state());
            (out, read)
        })
    }

    /// Runs `f` against `state` in the block environment `env` sets up, then puts the chain's
    /// own state and environment back: simulations and trace replays leave no trace.
    pub(super) fn on_state<R>(
        &mut self,
        state: State,
        env: impl FnOnce(&mut BlockEnv),
        f: impl FnOnce(&mut Self) -> R,
    ) -> R {
        let saved_state = std::mem::replace(self.exec.state_mut(), state);
        let saved_env = self.exec.block().clone();
        env(self.exec.block_mut());
        self.install_block_hashes();
        self.exec.begin_block();
        let out = f(self);
        *self.exec.state_mut() = saved_state;
        *self.exec.block_mut() = saved_env;
        out
    }

    /// One simulated message on the current executor state: intrinsic gas, no fees.
    pub(super) fn run_simulated(&mut self, req: &CallRequest) -> SimOutcome {
        let tx_env = self.exec.tx_env_mut();
        tx_env.gas_price = U256::ZERO;
        tx_env.access_list = req.access_list.clone();
        let from = req.from.unwrap_or_default();
        let gas_limit = req.gas.unwrap_or(self.view.config.block_gas_limit);
        let intrinsic =
            message_intrinsic_gas(&req.data, req.to.is_none()) + access_list_gas(&req.access_list);
        if gas_limit < intrinsic {
            return SimOutcome {
                success: false,
                output: Bytes::new(),
                gas_used: gas_limit,
                gas_refund: 0,
                logs: vec![],
                halted: Some("intrinsic gas too low"),
            };
        }
        let gas = gas_limit - intrinsic;
        match req.to {
            None => {
                let c = self.exec.create(from, req.value, &req.data, gas);
                SimOutcome {
                    success: c.address.is_some(),
                    output: c
                        .address
                        .map_or(c.revert_data, |a| self.exec.state().code(a)),
                    gas_used: intrinsic + c.gas_used,
                    gas_refund: c.gas_refund,
                    logs: c.logs,
                    halted: None,
                }
            }
            Some(to) => {
                let r = self.exec.call(from, to, req.value, &req.data, gas, false);
                SimOutcome {
                    success: r.success,
                    output: r.return_data,
                    gas_used: intrinsic + r.gas_used,
                    gas_refund: r.gas_refund,
                    logs: r.logs,
                    halted: match r.status {
                        CallStatus::Halt(reason) => Some(reason),
                        CallStatus::OutOfGas => Some("out of gas"),
                        CallStatus::Success | CallStatus::Revert => None,
                    },
                }
            }
        }
    }

    /// The smallest gas limit (to within 1/64) with which `req` succeeds, found by binary
    /// search between the gas used at the cap and the cap (the 63/64 rule means gas used is
    /// not always enough). `Err` carries the failing outcome at the cap.
    ///
    /// Before searching, a few optimistic limits just above the gas used (a call `k` frames
    /// deep keeps 1/64 back per frame) narrow the range, as geth does: a nested Stylus call
    /// then costs three or four executions instead of a dozen over the whole block limit.
    pub fn estimate_gas(
        &mut self,
        req: &CallRequest,
        state_override: impl Fn(&mut State),
    ) -> Result<u64, SimOutcome> {
        let cap = req.gas.unwrap_or(self.view.config.block_gas_limit);
        let mut r = req.clone();
        r.gas = Some(cap);
        let first = self.simulate(&r, None, &state_override);
        if !first.success {
            return Err(first);
        }
        r.gas = Some(first.gas_used);
        if self.simulate(&r, None, &state_override).success {
            return Ok(first.gas_used);
        }
        // Invariant: fails at `lo`, succeeds at `hi`.
        let (mut lo, mut hi) = (first.gas_used, cap);
        let mut optimistic = first.gas_used;
        for _ in 0..4 {
            optimistic = optimistic.saturating_mul(64) / 63 + 2_300;
            if optimistic >= hi {
                break;
            }
            r.gas = Some(optimistic);
            if self.simulate(&r, None, &state_override).success {
                hi = optimistic;
                break;
            }
            lo = optimistic;
        }
        while hi - lo > 1 && (hi - lo) * 64 > hi {
            let mid = lo + (hi - lo) / 2;
            r.gas = Some(mid);
            if self.simulate(&r, None, &state_override).success {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        Ok(hi)
    }
}

/// What a message touched, as an access list: every slot it read or wrote, and every other
/// account it reached but those in `skip` and the precompiles, reverted frames included.
fn touched(state: &State, skip: &[Address]) -> AccessList {
    let (accounts, slots) = state.touched();
    let mut by_address: std::collections::BTreeMap<Address, Vec<B256>> = Default::default();
    for (address, slot) in slots {
        by_address.entry(*address).or_default().push(*slot);
    }
    for address in accounts {
        if !skip.contains(address) && !crate::exec::is_system_address(*address) {
            by_address.entry(*address).or_default();
        }
    }
    AccessList(
        by_address
            .into_iter()
            .map(|(address, mut storage_keys)| {
                storage_keys.sort();
                AccessListItem {
                    address,
                    storage_keys,
                }
            })
            .collect(),
    )
}
