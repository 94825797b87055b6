//! Accepting transactions: decoding, validation, senders (keys, impersonation) and the pool.

use super::*;

impl Chain {
    /// Decodes, validates and queues a raw signed transaction (EIP-2718 envelope or legacy RLP);
    /// with automine, mines it at once. Returns the transaction hash.
    pub fn send_raw_transaction(&mut self, raw: &[u8]) -> Result<B256, TxError> {
        self.send_transaction(decode_raw_transaction(raw)?)
    }

    /// Validates and queues a decoded signed transaction (see [`Chain::send_raw_transaction`]).
    pub fn send_transaction(&mut self, envelope: TxEnvelope) -> Result<B256, TxError> {
        self.send_recovered(Recovered::new(envelope))
    }

    /// [`Chain::send_transaction`] for a transaction whose sender was recovered beforehand
    /// (outside the chain's lock: recovery is the costliest step that needs no chain).
    pub fn send_recovered(&mut self, tx: Recovered) -> Result<B256, TxError> {
        let Recovered { envelope, from } = tx;
        if !matches!(
            envelope,
            TxEnvelope::Legacy(_) | TxEnvelope::Eip2930(_) | TxEnvelope::Eip1559(_)
        ) {
            return Err(TxError::UnsupportedType);
        }
        // Pre-EIP-155 legacy transactions carry no chain id; they are accepted (as geth does
        // with --rpc.allow-unprotected-txs), since some deploy tools still produce them.
        if let Some(have) = envelope.chain_id() {
            if have != self.view.config.chain_id {
                return Err(TxError::WrongChainId {
                    have,
                    want: self.view.config.chain_id,
                });
            }
        }
        self.submit(envelope, from?)
    }

    /// `eth_sendTransaction` from `from`: a dev account's transaction is signed with its key;
    /// an impersonated account's (`anvil_impersonateAccount`) carries a placeholder signature
    /// derived from the sender (so two senders' identical transactions hash apart), and its
    /// sender is taken as given. Other senders are refused (`unknown account`).
    pub fn send_as(&mut self, from: Address, tx: TxEip1559) -> Result<B256, TxError> {
        let dev = dev_accounts().iter().find(|a| a.address == from);
        let signature = match dev {
            Some(account) => {
                let (sig, recid) = account
                    .signing_key()
                    .sign_prehash_recoverable(tx.signature_hash().as_slice())
                    .map_err(|e| TxError::InvalidSignature(e.to_string()))?;
                Signature::from_signature_and_parity(sig, recid.is_y_odd())
            }
            None if self.impersonated.contains(&from) => {
                Signature::new(U256::from_be_bytes(keccak256(from).0), U256::from(1), false)
            }
            None => return Err(TxError::UnknownAccount),
        };
        let envelope: TxEnvelope = tx.into_signed(signature).into();
        self.submit(envelope, from)
    }

    /// Whether [`Chain::send_as`] can send as `from`: a dev account or an impersonated one.
    pub fn may_send_as(&self, from: Address) -> bool {
        self.impersonated.contains(&from) || dev_accounts().iter().any(|a| a.address == from)
    }

    /// Lets `eth_sendTransaction` send as `address` without its key (`anvil_impersonateAccount`).
    pub fn impersonate(&mut self, address: Address) {
        self.impersonated.insert(address);
    }

    /// Ends [`Chain::impersonate`] (`anvil_stopImpersonatingAccount`).
    pub fn stop_impersonating(&mut self, address: Address) {
        self.impersonated.remove(&address);
    }

    /// Validates and queues `envelope` sent by `from` (not already known; nonce, gas, fees,
    /// balance; replacing a pooled transaction of the same sender and nonce).
    pub(super) fn submit(&mut self, envelope: TxEnvelope, from: Address) -> Result<B256, TxError> {
        let hash = *envelope.tx_hash();
        if self.view.txs.contains(&hash) || self.pending.iter().any(|p| p.hash == hash) {
            return Err(TxError::AlreadyKnown);
        }
        let expected = self.pending_nonce(from);
        let nonce = envelope.nonce();
        // A nonce already in the pool replaces that transaction if it pays enough more.
        let replaces = self
            .pending
            .iter()
            .position(|p| p.from == from && p.envelope.nonce() == nonce);
        if nonce < expected && replaces.is_none() {
            return Err(TxError::NonceTooLow {
                state: expected,
                tx: nonce,
            });
        }
        if nonce > expected {
            // No queue for future nonces: a dev chain reports the gap at once.
            return Err(TxError::NonceTooHigh {
                state: expected,
                tx: nonce,
            });
        }
        if envelope.gas_limit() > self.view.config.block_gas_limit {
            return Err(TxError::GasLimitExceeded);
        }
        let want = intrinsic_gas(&envelope);
        if envelope.gas_limit() < want {
            return Err(TxError::IntrinsicGasTooLow {
                have: envelope.gas_limit(),
                want,
            });
        }
        let max_fee = envelope.max_fee_per_gas();
        if let Some(tip) = envelope.max_priority_fee_per_gas() {
            if tip > max_fee {
                return Err(TxError::TipAboveFeeCap);
            }
        }
        if max_fee < u128::from(self.view.config.base_fee) {
            return Err(TxError::FeeCapTooLow {
                max_fee,
                base_fee: self.view.config.base_fee,
            });
        }
        let cost = U256::from(envelope.gas_limit()) * U256::from(max_fee) + envelope.value();
        let have = self.exec.state().balance(from);
        if have < cost {
            return Err(TxError::InsufficientFunds { have, want: cost });
        }
        let tx = PendingTx {
            envelope,
            hash,
            from,
        };
        match replaces {
            Some(i) => {
                let old = &self.pending[i].envelope;
                let bumped = |new: u128, old: u128| {
                    new.saturating_mul(100) >= old.saturating_mul(100 + PRICE_BUMP_PERCENT)
                };
                let tip =
                    |e: &TxEnvelope| e.max_priority_fee_per_gas().unwrap_or(e.max_fee_per_gas());
                if !bumped(tx.envelope.max_fee_per_gas(), old.max_fee_per_gas())
                    || !bumped(tip(&tx.envelope), tip(old))
                {
                    return Err(TxError::ReplacementUnderpriced);
                }
                self.pending[i] = tx;
            }
            None => self.pending.push(tx),
        }
        self.note_pending(hash);
        if self.automine {
            self.mine(1);
        }
        Ok(hash)
    }

    /// A transaction waiting in the pool (automine off): its envelope and sender.
    pub fn pending_transaction(&self, hash: B256) -> Option<(&TxEnvelope, Address)> {
        self.pending
            .iter()
            .find(|p| p.hash == hash)
            .map(|p| (&p.envelope, p.from))
    }

    /// The pool: transactions waiting for the next block, in arrival order, with their senders
    /// (`txpool_content`).
    pub fn pool(&self) -> impl Iterator<Item = (&TxEnvelope, Address)> {
        self.pending.iter().map(|p| (&p.envelope, p.from))
    }

    /// Removes a pooled transaction (`anvil_dropTransaction`); false if none has this hash.
    pub fn drop_transaction(&mut self, hash: B256) -> bool {
        let before = self.pending.len();
        self.pending.retain(|p| p.hash != hash);
        self.pending.len() != before
    }

    /// Empties the pool (`anvil_dropAllTransactions`).
    pub fn drop_all_transactions(&mut self) {
        self.pending.clear();
    }

    /// Next nonce of `address` counting pool transactions (`pending` tag).
    pub fn pending_nonce(&self, address: Address) -> u64 {
        let pooled = self.pending.iter().filter(|p| p.from == address).count() as u64;
        self.exec.state().nonce(address) + pooled
    }
}
