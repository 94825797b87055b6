//! What the owner is told about whom the agent may pay, and that it is so on the devnet's WASM
//! (issue 42): a live allowlist pays whoever its admins add after the owner signed, and the
//! owner's page says so and names them; a pinned one pays only what was on it when the terms
//! were prepared, while removals hold at once.

use alloy_primitives::B256;
use bursar_bindings::counterparty::ICounterpartyRegistry;
use bursar_client::Sender;
use bursar_deploy::Contract;
use serde_json::{json, Value};

use super::flow::{code, system, usd, System};
use super::*;

/// The list's owner (the test's operator) sets an entry.
async fn set_entry(s: &System, who: alloy_primitives::Address, allowed: bool) {
    let registry = s
        .record
        .address(Contract::CounterpartyRegistry.key())
        .unwrap();
    let mut operator = Sender::new(&s.client, dev_key(0)).await.unwrap();
    let call = ICounterpartyRegistry::setEntryCall {
        listId: s.list_id,
        counterparty: who,
        allowed,
        maxPerPayment: alloy_primitives::U256::ZERO,
        label: B256::right_padding_from(b"added later"),
    };
    operator.transact(&s.client, registry, &call).await.unwrap();
}

/// The owner's page of a session prepared with `extra`.
async fn page(s: &System, extra: Value) -> String {
    let mut terms = json!({
        "owner": s.owner.address(),
        "token": s.record.address(Contract::TestToken.key()).unwrap(),
        "deposit": "1", "expiresAt": s.chain_now().await + 86_400,
        "allowlistId": s.list_id.to_string(),
    });
    for (k, v) in extra.as_object().unwrap() {
        terms[k] = v.clone();
    }
    let (status, prep) = s.post("/v1/sessions/prepare", &s.host, terms).await;
    assert_eq!(status, 201, "{prep}");
    let url = prep["approvalUrl"].as_str().unwrap();
    s.http.get(url).send().await.unwrap().text().await.unwrap()
}

async fn a_pinned_allowlist_pays_only_what_the_owner_saw(db: Db) {
    let s = system(db).await;
    let half = |pin: bool| json!({ "deposit": usd(50).to_string(), "pinAllowlist": pin });
    let (_, pinned) = s.open_session(half(true)).await;
    let (_, live) = s.open_session(half(false)).await;
    let (_, limits) = s.get("/v1/limits", &pinned).await;
    assert!(limits["allowlistPinnedAt"].as_u64().is_some(), "{limits}");
    assert_eq!(limits["allowlistId"], s.list_id.to_string(), "{limits}");
    let (_, limits) = s.get("/v1/limits", &live).await;
    assert!(limits["allowlistPinnedAt"].is_null(), "{limits}");

    // The list's admin adds vendor C after both sessions opened.
    set_entry(&s, s.vendor_c, true).await;
    let paid = s.pay_settled(&live, s.vendor_c, usd(1)).await;
    assert_eq!(paid["status"], "confirmed", "the live list pays it: {paid}");
    let (status, e) = s.pay(&pinned, s.vendor_c, usd(1)).await;
    assert_eq!(
        (status, code(&e)),
        (422, "WalletCounterpartyNotAllowed"),
        "the pinned list does not: {e}"
    );
    let listed = |limits: &Value| -> Vec<String> {
        limits["counterparties"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["address"].as_str().unwrap().to_owned())
            .collect()
    };
    let c = s.vendor_c.to_checksum(None);
    assert!(listed(&s.get("/v1/limits", &live).await.1).contains(&c));
    assert!(!listed(&s.get("/v1/limits", &pinned).await.1).contains(&c));

    // A removal holds at once for both.
    set_entry(&s, s.vendor_b, false).await;
    for token in [&pinned, &live] {
        let (status, e) = s.pay(token, s.vendor_b, usd(1)).await;
        assert_eq!(
            (status, code(&e)),
            (422, "WalletCounterpartyNotAllowed"),
            "{e}"
        );
    }

    // The owner's page says which, and who can change the list.
    let operator = dev_key(0).address().to_checksum(None);
    let live_page = page(&s, json!({})).await;
    assert!(live_page.contains("Live list."), "{live_page}");
    assert!(
        live_page.contains("can add, change or remove"),
        "{live_page}"
    );
    assert!(live_page.contains(&operator), "the list's owner is named");
    assert!(!live_page.contains("(nobody else)"), "{live_page}");
    let pinned_page = page(&s, json!({ "pinAllowlist": true })).await;
    assert!(pinned_page.contains("Pinned list."), "{pinned_page}");
    assert!(pinned_page.contains(&operator));
    assert!(pinned_page.contains("pinned as of"), "{pinned_page}");
}

/// A host makes and edits a list with no chain call of its own: created with its entries and
/// an admin, paid from, edited and emptied through the API; what the registry refuses is
/// refused with its error and nothing sent; another host sees nothing of it.
async fn a_host_makes_and_edits_an_allowlist_through_the_api(db: Db) {
    let s = system(db).await;
    let admin = dev_key(3).address();
    let (status, list) = s
        .post(
            "/v1/allowlists",
            &s.host,
            json!({
                "entries": [
                    { "address": s.vendor_a, "label": "model-api", "maxPerPayment": usd(5).to_string() },
                    { "address": s.vendor_b },
                ],
                "admins": [admin],
            }),
        )
        .await;
    assert_eq!(status, 201, "{list}");
    let id = list["id"].as_str().unwrap().to_owned();
    assert_ne!(id, s.list_id.to_string(), "a new list");
    let editors = list["editors"].as_array().unwrap();
    assert_eq!(editors.len(), 2, "{list}");
    assert_eq!(editors[1], json!(admin.to_checksum(None)));
    let listed = &list["counterparties"];
    assert_eq!(listed[0]["label"], "model-api", "{list}");
    assert_eq!(listed[0]["maxPerPayment"], usd(5).to_string());
    assert!(listed[1]["maxPerPayment"].is_null());

    // A session on it pays by its rules.
    let (_, token) = s
        .open_session(json!({ "allowlistId": id, "deposit": usd(50).to_string() }))
        .await;
    let (status, e) = s.pay(&token, s.vendor_a, usd(6)).await;
    assert_eq!(
        (status, code(&e)),
        (422, "WalletCounterpartyNotAllowed"),
        "{e}"
    );
    assert_eq!(
        s.pay_settled(&token, s.vendor_a, usd(5)).await["status"],
        "confirmed"
    );

    // Edited: C added; B removed.
    let path = format!("/v1/allowlists/{id}/entries");
    let add = json!({ "entries": [{ "address": s.vendor_c, "label": "search" }] });
    let (status, list) = s.put(&path, &s.host, add).await;
    assert_eq!(status, 200, "{list}");
    assert_eq!(
        list["counterparties"].as_array().unwrap().len(),
        3,
        "{list}"
    );
    assert_eq!(
        s.pay_settled(&token, s.vendor_c, usd(1)).await["status"],
        "confirmed"
    );
    let remove = format!("{path}/{}", s.vendor_b);
    let (status, list) = s.delete(&remove, &s.host).await;
    assert_eq!(status, 200, "{list}");
    let (status, e) = s.pay(&token, s.vendor_b, usd(1)).await;
    assert_eq!(
        (status, code(&e)),
        (422, "WalletCounterpartyNotAllowed"),
        "{e}"
    );

    // Refused before anything is sent: the registry's own rule, a label it cannot keep.
    let wallet = s.record.address(Contract::SessionWallet.key()).unwrap();
    for (entry, expected) in [
        (
            json!({ "address": wallet }),
            (422, "CounterpartyInvalidAddress"),
        ),
        (
            json!({ "address": alloy_primitives::Address::ZERO }),
            (422, "CounterpartyInvalidAddress"),
        ),
        (
            json!({ "address": s.vendor_c, "label": "x".repeat(33) }),
            (400, "invalid_request"),
        ),
    ] {
        let (status, e) = s.put(&path, &s.host, json!({ "entries": [entry] })).await;
        assert_eq!((status, code(&e)), expected, "{e}");
    }
    let (_, lists) = s.get("/v1/allowlists", &s.host).await;
    assert_eq!(lists["ids"], json!([id]), "{lists}");

    // Another host: not found, whatever it tries.
    let (_, theirs) = s.get("/v1/allowlists", &s.stranger).await;
    assert_eq!(theirs["ids"], json!([]), "{theirs}");
    assert_eq!(
        s.get(&format!("/v1/allowlists/{id}"), &s.stranger).await.0,
        404
    );
    assert_eq!(s.delete(&remove, &s.stranger).await.0, 404);
}

on_both_databases!(
    a_pinned_allowlist_pays_only_what_the_owner_saw,
    a_host_makes_and_edits_an_allowlist_through_the_api,
);
