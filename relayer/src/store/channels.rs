//! x402 `batch-settlement` channels sessions pay into: what was deposited into each, the
//! highest voucher signed, each deposit until the token used it or it lapsed, each paid call.

use alloy_primitives::{Address, B256, U256};
use sqlx::Row;

use super::{parsed, Store, StoreError};

/// A session's channel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChannelRow {
    /// Its id: the EIP-712 hash of its config.
    pub channel_id: B256,
    /// The session paying into it.
    pub session_id: String,
    /// Who is paid.
    pub receiver: Address,
    /// Who claims and refunds for the receiver.
    pub receiver_authorizer: Address,
    /// Seconds between the payer's asking to withdraw and the withdrawal.
    pub withdraw_delay: u64,
    /// Deposits reserved and not released.
    pub deposited: U256,
    /// The highest voucher signed.
    pub signed: U256,
}

/// Where a deposit stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DepositStatus {
    /// Reserved by the wallet; the token may use it until its `validBefore`.
    Reserved,
    /// Used by the token and counted in its channel on chain.
    Confirmed,
    /// Never used: given back to the session.
    Released,
}

impl DepositStatus {
    fn as_str(self) -> &'static str {
        match self {
            DepositStatus::Reserved => "reserved",
            DepositStatus::Confirmed => "confirmed",
            DepositStatus::Released => "released",
        }
    }
}

/// One deposit into a channel, as `reserveDeposit` was given it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DepositRow {
    /// The authorization's digest under the token's domain (the wallet's reservation key).
    pub digest: B256,
    /// The channel it funds.
    pub channel_id: B256,
    /// How much.
    pub amount: U256,
    /// Usable before this time.
    pub valid_before: u64,
    /// The purpose the wallet derives its salt from.
    pub purpose: B256,
}

/// One paid call: the voucher signed for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VoucherRow {
    /// What the voucher lets the receiver claim in all.
    pub cumulative: U256,
    /// The call's price.
    pub amount: U256,
    /// The resource paid for.
    pub resource: String,
    /// Its purpose (the resource and the terms).
    pub purpose: B256,
}

fn channel_row(r: &sqlx::any::AnyRow) -> Result<ChannelRow, StoreError> {
    Ok(ChannelRow {
        channel_id: parsed(r, "channel_id")?,
        session_id: r.try_get("session_id")?,
        receiver: parsed(r, "receiver")?,
        receiver_authorizer: parsed(r, "receiver_authorizer")?,
        withdraw_delay: r.try_get::<i64, _>("withdraw_delay")? as u64,
        deposited: parsed(r, "deposited")?,
        signed: parsed(r, "signed")?,
    })
}

fn deposit_row(r: &sqlx::any::AnyRow) -> Result<DepositRow, StoreError> {
    Ok(DepositRow {
        digest: parsed(r, "digest")?,
        channel_id: parsed(r, "channel_id")?,
        amount: parsed(r, "amount")?,
        valid_before: r.try_get::<i64, _>("valid_before")? as u64,
        purpose: parsed(r, "purpose")?,
    })
}

const CHANNEL_COLUMNS: &str = "channel_id, session_id, receiver, receiver_authorizer, \
    withdraw_delay, deposited, signed";

impl Store {
    /// The channel `id`, if a session pays into it.
    pub async fn channel(&self, id: B256) -> Result<Option<ChannelRow>, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT {CHANNEL_COLUMNS} FROM x402_channels WHERE channel_id = $1"
        ))
        .bind(id.to_string())
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(channel_row).transpose()
    }

    /// A session's channels.
    pub async fn channels_of(&self, session_id: &str) -> Result<Vec<ChannelRow>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {CHANNEL_COLUMNS} FROM x402_channels WHERE session_id = $1 ORDER BY channel_id"
        ))
        .bind(session_id)
        .fetch_all(&self.read)
        .await?;
        rows.iter().map(channel_row).collect()
    }

    /// Channels something was deposited into, least recently changed or looked at first:
    /// those whose returns may need crediting.
    pub async fn channels_with_returns(&self, limit: i64) -> Result<Vec<ChannelRow>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {CHANNEL_COLUMNS} FROM x402_channels WHERE deposited <> '0' \
             ORDER BY updated_at LIMIT $1"
        ))
        .bind(limit)
        .fetch_all(&self.read)
        .await?;
        rows.iter().map(channel_row).collect()
    }

    /// Marks a channel looked at now (`channels_with_returns` takes the others first).
    pub async fn touch_channel(&self, id: B256, now: i64) -> Result<(), StoreError> {
        sqlx::query("UPDATE x402_channels SET updated_at = $1 WHERE channel_id = $2")
            .bind(now)
            .bind(id.to_string())
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Records `channel` (nothing deposited or signed) unless it is known.
    pub async fn open_channel(&self, channel: &ChannelRow, now: i64) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO x402_channels (channel_id, session_id, receiver, receiver_authorizer, \
             withdraw_delay, deposited, signed, updated_at) VALUES ($1, $2, $3, $4, $5, '0', '0', $6) \
             ON CONFLICT (channel_id) DO NOTHING",
        )
        .bind(channel.channel_id.to_string())
        .bind(&channel.session_id)
        .bind(format!("{:#x}", channel.receiver))
        .bind(format!("{:#x}", channel.receiver_authorizer))
        .bind(channel.withdraw_delay as i64)
        .bind(now)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Moves a channel's deposited total to `to(total)`, the total read and written in `db`
    /// (compared when written: another process may move it between).
    async fn move_deposited(
        db: &mut super::DbTx,
        id: B256,
        to: impl Fn(U256) -> U256,
        now: i64,
    ) -> Result<(), StoreError> {
        loop {
            let row = sqlx::query("SELECT deposited FROM x402_channels WHERE channel_id = $1")
                .bind(id.to_string())
                .fetch_one(&mut **db)
                .await?;
            let old: U256 = parsed(&row, "deposited")?;
            let moved = sqlx::query(
                "UPDATE x402_channels SET deposited = $1, updated_at = $2 \
                 WHERE channel_id = $3 AND deposited = $4",
            )
            .bind(to(old).to_string())
            .bind(now)
            .bind(id.to_string())
            .bind(old.to_string())
            .execute(&mut **db)
            .await?
            .rows_affected();
            if moved == 1 {
                return Ok(());
            }
        }
    }

    /// Records a deposit reserved into its channel, adding it to the channel's total.
    pub async fn add_deposit(&self, d: &DepositRow, now: i64) -> Result<(), StoreError> {
        let mut db = self.begin().await?;
        Self::move_deposited(&mut db, d.channel_id, |old| old + d.amount, now).await?;
        sqlx::query(
            "INSERT INTO x402_deposits (digest, channel_id, amount, valid_before, purpose, status, \
             created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(d.digest.to_string())
        .bind(d.channel_id.to_string())
        .bind(d.amount.to_string())
        .bind(d.valid_before as i64)
        .bind(d.purpose.to_string())
        .bind(DepositStatus::Reserved.as_str())
        .bind(now)
        .execute(&mut *db)
        .await?;
        db.commit().await?;
        Ok(())
    }

    /// Deposits still reserved (their fate not known yet), oldest first.
    pub async fn reserved_deposits(&self, limit: i64) -> Result<Vec<DepositRow>, StoreError> {
        let rows = sqlx::query(
            "SELECT digest, channel_id, amount, valid_before, purpose FROM x402_deposits \
             WHERE status = $1 ORDER BY valid_before LIMIT $2",
        )
        .bind(DepositStatus::Reserved.as_str())
        .bind(limit)
        .fetch_all(&self.read)
        .await?;
        rows.iter().map(deposit_row).collect()
    }

    /// Records what became of a reserved deposit; a released one leaves its channel's total.
    pub async fn deposit_done(
        &self,
        d: &DepositRow,
        status: DepositStatus,
        now: i64,
    ) -> Result<(), StoreError> {
        let mut db = self.begin().await?;
        let changed =
            sqlx::query("UPDATE x402_deposits SET status = $1 WHERE digest = $2 AND status = $3")
                .bind(status.as_str())
                .bind(d.digest.to_string())
                .bind(DepositStatus::Reserved.as_str())
                .execute(&mut *db)
                .await?
                .rows_affected();
        if changed == 1 && status == DepositStatus::Released {
            let less = |old: U256| old.saturating_sub(d.amount);
            Self::move_deposited(&mut db, d.channel_id, less, now).await?;
        }
        db.commit().await?;
        Ok(())
    }

    /// Records a call's voucher, moving the channel's signed total from `old` to
    /// `voucher.cumulative`: false (nothing recorded) when another call moved it meanwhile.
    pub async fn add_voucher(
        &self,
        channel: B256,
        old: U256,
        voucher: &VoucherRow,
        now: i64,
    ) -> Result<bool, StoreError> {
        let mut db = self.begin().await?;
        let moved = sqlx::query(
            "UPDATE x402_channels SET signed = $1, updated_at = $2 \
             WHERE channel_id = $3 AND signed = $4",
        )
        .bind(voucher.cumulative.to_string())
        .bind(now)
        .bind(channel.to_string())
        .bind(old.to_string())
        .execute(&mut *db)
        .await?
        .rows_affected();
        if moved != 1 {
            return Ok(false);
        }
        sqlx::query(
            "INSERT INTO x402_vouchers (channel_id, cumulative, amount, resource, purpose, \
             created_at) VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(channel.to_string())
        .bind(voucher.cumulative.to_string())
        .bind(voucher.amount.to_string())
        .bind(&voucher.resource)
        .bind(voucher.purpose.to_string())
        .bind(now)
        .execute(&mut *db)
        .await?;
        db.commit().await?;
        Ok(true)
    }

    /// A channel's paid calls, in order.
    pub async fn vouchers(&self, channel: B256) -> Result<Vec<VoucherRow>, StoreError> {
        let rows = sqlx::query(
            "SELECT cumulative, amount, resource, purpose FROM x402_vouchers \
             WHERE channel_id = $1 ORDER BY created_at",
        )
        .bind(channel.to_string())
        .fetch_all(&self.read)
        .await?;
        rows.iter()
            .map(|r| {
                Ok(VoucherRow {
                    cumulative: parsed(r, "cumulative")?,
                    amount: parsed(r, "amount")?,
                    resource: r.try_get("resource")?,
                    purpose: parsed(r, "purpose")?,
                })
            })
            .collect()
    }
}
