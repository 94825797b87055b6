//! Hosts' counterparty allowlists, made and edited through the relayer (`/v1/allowlists`), so
//! that a host needs no chain calls of its own: one of the relayer's signers creates the list
//! in the CounterpartyRegistry, owns it on chain and sends each later change for the host. Every
//! change is simulated from that signer first (a payee the registry refuses — zero, the wallet,
//! its gateway, a registry — is the registry's own error, and nothing is sent), then sent through
//! the engine and answered once mined. The host may name admins (its org's own wallet), who can
//! edit the list on chain directly too.

use std::time::Duration;

use alloy_primitives::{Address, B256, U256};
use alloy_sol_types::SolCall;
use bursar_bindings::counterparty::ICounterpartyRegistry;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::engine::submission::Call;
use crate::hosts::Host;
use crate::kernel::json::{schema, Amount};
use crate::kernel::{App, Error};
use crate::limits;
use crate::store::{now_ms, AllowlistRow, Store};

/// `POST /v1/allowlists`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateRequest {
    /// Its first counterparties.
    #[serde(default)]
    pub entries: Vec<EntryRequest>,
    /// Accounts that may edit its entries on chain themselves (an org's own wallet).
    #[serde(default)]
    #[schema(value_type = Vec<schema::Address>)]
    pub admins: Vec<Address>,
}

/// One counterparty to set.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EntryRequest {
    /// The counterparty.
    #[schema(value_type = schema::Address)]
    pub address: Address,
    /// Whether it may be paid (false lists it as refused).
    #[serde(default = "yes")]
    pub allowed: bool,
    /// The largest single payment to it, base units (0 or absent: only the session's cap).
    #[serde(default)]
    pub max_per_payment: Amount,
    /// What people call it (printable ASCII, at most 32 bytes).
    pub label: Option<String>,
}

fn yes() -> bool {
    true
}

/// `PUT /v1/allowlists/{id}/entries`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EntriesRequest {
    /// The counterparties to set (others are left as they are).
    pub entries: Vec<EntryRequest>,
}

/// A counterparty on a list.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Listed {
    /// Its address (EIP-55).
    #[schema(value_type = schema::Address)]
    pub address: String,
    /// Its label: text when it is text, else 0x-hex; null without one.
    pub label: Option<String>,
    /// The largest single payment to it, in base units of whatever token a session pays in;
    /// null: only the session's own cap.
    pub max_per_payment: Option<Amount>,
}

/// An allowlist as the API shows it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = Allowlist)]
pub struct AllowlistView {
    /// The registry's list id: a session's `allowlistId`.
    pub id: Amount,
    /// Who can change it: its owner (the relayer's signer), then its admins (EIP-55).
    #[schema(value_type = Vec<schema::Address>)]
    pub editors: Vec<String>,
    /// Who it lets be paid now.
    pub counterparties: Vec<Listed>,
}

/// A host's allowlist not created yet: its creation is not mined.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Creating {
    /// The engine's transaction.
    pub transaction: i64,
}

/// What `GET /v1/allowlists` lists.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AllowlistList {
    /// The host's allowlists' ids, newest first.
    #[schema(value_type = Vec<Amount>)]
    pub ids: Vec<Amount>,
    /// Creations not mined yet.
    pub creating: Vec<Creating>,
}

/// The signer that creates `host`'s lists: the same one for the same host.
fn signer_for(app: &App, host: &Host) -> Address {
    let signers = app.engine.signers();
    let byte = alloy_primitives::keccak256(host.id.as_bytes())[0];
    signers[usize::from(byte) % signers.len()]
}

/// Queues `calls` (each simulated from its signer first: a refusal is the registry's error and
/// nothing is sent) in a database transaction the caller commits with [`App::commit`], after
/// recording what it needs: the transactions' ids, in order.
async fn queue(
    app: &App,
    calls: &[(Address, Vec<u8>)],
) -> Result<(crate::store::DbTx, Vec<i64>), Error> {
    let registry = app.contracts.counterparties;
    let mut queued = Vec::with_capacity(calls.len());
    for (signer, data) in calls {
        queued.push(Call {
            signer: *signer,
            to: registry,
            gas_limit: app.gas_for(*signer, registry, data).await?,
            data: data.clone().into(),
            value: U256::ZERO,
        });
    }
    let fees = app.engine.fees().await?;
    let mut db = app.store.begin().await?;
    let ids = app.engine.submit_all_in(&mut db, &queued, fees).await?;
    Ok((db, ids.into_iter().map(|(id, _)| id).collect()))
}

/// Sends `calls` and waits until the last is mined (see [`queue`] and [`mined`]).
async fn send(app: &App, calls: &[(Address, Vec<u8>)]) -> Result<(), Error> {
    let (db, ids) = queue(app, calls).await?;
    app.commit(db).await?;
    let last = *ids.last().ok_or(Error::Internal)?;
    match mined(app, last, app.settings.open_wait).await? {
        true => Ok(()),
        false => Err(not_mined()),
    }
}

/// Whether transaction `tx` was mined within `wait`; a reverted one is refused.
async fn mined(app: &App, tx: i64, wait: Duration) -> Result<bool, Error> {
    let row = app
        .wait_for(wait, || async {
            Ok(app
                .store
                .transaction(tx)
                .await?
                .filter(|t| t.receipt_status.is_some()))
        })
        .await?;
    match row {
        None => Ok(false),
        Some(t) if t.receipt_status == Some(1) => Ok(true),
        Some(_) => Err(Error::conflict(
            "allowlist_change_failed",
            format!("the registry refused transaction {tx} when it was mined"),
        )),
    }
}

/// A label as the registry keeps it: the text's bytes, zero-padded to 32.
fn label(text: Option<&str>) -> Result<B256, Error> {
    let Some(text) = text else {
        return Ok(B256::ZERO);
    };
    if text.len() > 32 || !text.bytes().all(|b| b.is_ascii_graphic() || b == b' ') {
        return Err(Error::invalid(
            "label",
            "a label is at most 32 bytes of printable ASCII",
        ));
    }
    Ok(B256::right_padding_from(text.as_bytes()))
}

/// `setEntries` of `entries` on `list`.
fn set_entries(list: U256, entries: &[EntryRequest]) -> Result<Vec<u8>, Error> {
    let labels = entries
        .iter()
        .map(|e| label(e.label.as_deref()))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(ICounterpartyRegistry::setEntriesCall {
        listId: list,
        counterparties: entries.iter().map(|e| e.address).collect(),
        allowed: entries.iter().map(|e| e.allowed).collect(),
        maxPerPayment: entries.iter().map(|e| e.max_per_payment.0).collect(),
        labels,
    }
    .abi_encode())
}

/// Creates an allowlist for `host`, then sets its first entries and admins: the list once
/// all is mined.
pub async fn create(app: &App, host: &Host, req: CreateRequest) -> Result<AllowlistView, Error> {
    // Checked before anything is sent: a bad label would strand a created list.
    for e in &req.entries {
        label(e.label.as_deref())?;
    }
    let signer = signer_for(app, host);
    let create = ICounterpartyRegistry::createListCall {}.abi_encode();
    let (mut db, ids) = queue(app, &[(signer, create)]).await?;
    Store::insert_allowlist(&mut db, ids[0], &host.id, signer, now_ms()).await?;
    app.commit(db).await?;
    if !mined(app, ids[0], app.settings.open_wait).await? {
        return Err(not_mined());
    }
    let list = resolve(app, ids[0]).await?;
    edit(app, host, list, &req.entries, &req.admins).await
}

fn not_mined() -> Error {
    Error::conflict(
        "allowlist_pending",
        "sent but not mined yet: GET /v1/allowlists lists it once it is",
    )
}

/// The list id creation transaction `tx` made, recorded.
async fn resolve(app: &App, tx: i64) -> Result<U256, Error> {
    let row = app.store.transaction(tx).await?.ok_or(Error::Internal)?;
    let hash = row.mined_hash.ok_or(Error::Internal)?;
    let receipt = app.client.receipt(hash).await?.ok_or(Error::Internal)?;
    let created = receipt
        .events::<ICounterpartyRegistry::ListCreated>(app.contracts.counterparties)
        .first()
        .map(|e| e.listId)
        .ok_or(Error::Internal)?;
    app.store.set_allowlist_id(tx, created).await?;
    Ok(created)
}

/// Sets `entries` and enables `admins` on `host`'s list `list`: the list once mined.
pub async fn edit(
    app: &App,
    host: &Host,
    list: U256,
    entries: &[EntryRequest],
    admins: &[Address],
) -> Result<AllowlistView, Error> {
    let row = owned(app, host, list).await?;
    let mut calls = Vec::new();
    if !entries.is_empty() {
        calls.push((row.signer, set_entries(list, entries)?));
    }
    for admin in admins {
        let call = ICounterpartyRegistry::setAdminCall {
            listId: list,
            admin: *admin,
            enabled: true,
        };
        calls.push((row.signer, call.abi_encode()));
    }
    if !calls.is_empty() {
        send(app, &calls).await?;
    }
    view(app, list).await
}

/// Removes `counterparty` from `host`'s list `list`: the list once mined.
pub async fn remove(
    app: &App,
    host: &Host,
    list: U256,
    counterparty: Address,
) -> Result<AllowlistView, Error> {
    let row = owned(app, host, list).await?;
    let call = ICounterpartyRegistry::removeEntryCall {
        listId: list,
        counterparty,
    };
    send(app, &[(row.signer, call.abi_encode())]).await?;
    view(app, list).await
}

/// `host`'s list `list`, or not found.
async fn owned(app: &App, host: &Host, list: U256) -> Result<AllowlistRow, Error> {
    app.store
        .host_allowlist(&host.id, list)
        .await?
        .ok_or(Error::NotFound)
}

/// `host`'s list `list` as it is on chain now.
pub async fn get(app: &App, host: &Host, list: U256) -> Result<AllowlistView, Error> {
    owned(app, host, list).await?;
    view(app, list).await
}

async fn view(app: &App, list: U256) -> Result<AllowlistView, Error> {
    let (entries, editors) = tokio::try_join!(
        limits::counterparties_of(app, list),
        limits::editors_of(app, list),
    )?;
    let counterparties = entries
        .into_iter()
        .map(|(address, cap, label)| Listed {
            address: address.to_checksum(None),
            label: limits::label_text(label),
            max_per_payment: (!cap.is_zero()).then_some(Amount(cap)),
        })
        .collect();
    Ok(AllowlistView {
        id: Amount(list),
        editors: editors.iter().map(|e| e.to_checksum(None)).collect(),
        counterparties,
    })
}

/// `host`'s allowlists, newest first; creations mined since are resolved on the way.
pub async fn list(app: &App, host: &Host) -> Result<AllowlistList, Error> {
    let mut ids = Vec::new();
    let mut creating = Vec::new();
    for row in app.store.host_allowlists(&host.id).await? {
        let id = match row.list_id {
            Some(id) => Some(id),
            None => match mined(app, row.create_transaction, Duration::ZERO).await? {
                true => Some(resolve(app, row.create_transaction).await?),
                false => None,
            },
        };
        match id {
            Some(id) => ids.push(Amount(id)),
            None => creating.push(Creating {
                transaction: row.create_transaction,
            }),
        }
    }
    Ok(AllowlistList { ids, creating })
}
