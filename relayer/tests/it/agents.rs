//! ERC-8004 agents registered for owners through the relayer, on the devnet's registries: the
//! host prepares, the owner consents in its wallet (nothing else), a relayer signer registers
//! and hands the token over, and anyone reads the registration file the relayer serves.
//! Refused: a stranger's signature, another host's agent, a file before its owner consented.

use alloy_primitives::U256;
use bursar_bindings::erc8004::{IIdentityRegistry, IDENTITY_REGISTRY};
use serde_json::{json, Value};

use super::flow::{code, system, wallet_sign};
use super::*;

on_both_databases!(an_owner_gets_an_agent_it_consented_to_and_pays_no_gas);

async fn an_owner_gets_an_agent_it_consented_to_and_pays_no_gas(db: Db) {
    let s = system(db).await;
    let owner = s.owner.address();
    let owner_eth = s.client.balance(owner).await.unwrap();
    let (status, prepared) = s
        .post(
            "/v1/agents/prepare",
            &s.host,
            json!({
                "owner": owner, "name": "scout", "description": "Finds datasets",
                "services": [{"name": "MCP", "endpoint": "https://scout.example/mcp", "version": "2025-06-18"}],
            }),
        )
        .await;
    assert_eq!(status, 201, "{prepared}");
    assert_eq!(prepared["status"], "prepared", "{prepared}");
    let agent_ref = prepared["agentRef"].as_str().unwrap().to_owned();
    let file_url = prepared["registrationUrl"].as_str().unwrap().to_owned();
    assert_eq!(
        prepared["typedData"]["message"]["agentURI"],
        file_url.as_str()
    );
    // Nobody reads a file its owner has not consented to.
    let file_path = format!("/agents/{agent_ref}/registration.json");
    assert!(file_url.ends_with(&file_path), "{file_url}");
    assert_eq!(s.get(&file_path, "").await.0, 404);
    assert_eq!(
        s.get(&format!("/v1/agents/{agent_ref}"), &s.stranger)
            .await
            .0,
        404
    );
    let (status, e) = s
        .post(
            "/v1/agents/prepare",
            &s.host,
            json!({ "owner": owner, "name": "a\u{202e}b" }),
        )
        .await;
    assert_eq!((status, code(&e)), (400, "invalid_request"), "{e}");

    // A signature that is not the owner's is refused; the owner's registers.
    let typed = &prepared["typedData"];
    let stranger = wallet_sign(&dev_key(5), typed);
    let consent = |signature: &str| json!({ "agentRef": agent_ref, "ownerSignature": signature });
    let (status, e) = s.post("/v1/agents", &s.host, consent(&stranger)).await;
    assert_eq!((status, code(&e)), (400, "invalid_request"), "{e}");
    assert_eq!(e["details"]["field"], "ownerSignature", "{e}");
    let signed = wallet_sign(&s.owner, typed);
    let (status, r) = s.post("/v1/agents", &s.host, consent(&signed)).await;
    assert_eq!(status, 202, "{r}");
    let done = s
        .get_when(&format!("/v1/agents/{agent_ref}"), &s.host, |v| {
            v["status"] == "registered" || v["status"] == "failed"
        })
        .await;
    assert_eq!(done["status"], "registered", "{done}");
    let agent: U256 = done["agentId"].as_str().unwrap().parse().unwrap();

    // On chain: the owner holds it, its URI is the relayer's file; the owner paid nothing.
    let holder = s
        .client
        .view(
            None,
            IDENTITY_REGISTRY,
            IIdentityRegistry::ownerOfCall { tokenId: agent },
        )
        .await
        .unwrap();
    assert_eq!(holder, owner);
    let uri = s
        .client
        .view(
            None,
            IDENTITY_REGISTRY,
            IIdentityRegistry::tokenURICall { tokenId: agent },
        )
        .await
        .unwrap();
    assert_eq!(uri, file_url);
    assert_eq!(s.client.balance(owner).await.unwrap(), owner_eth);

    // The file, as any ERC-8004 client reads it: what the owner consented to, and where it
    // is registered.
    let (status, file) = s.get(&file_path, "").await;
    assert_eq!(status, 200, "{file}");
    assert_eq!(file["name"], "scout");
    assert_eq!(file["services"][0]["endpoint"], "https://scout.example/mcp");
    assert_eq!(file["x402Support"], true);
    assert_eq!(file["supportedTrust"], json!(["reputation"]));
    let registry = format!("eip155:412346:{IDENTITY_REGISTRY}");
    assert_eq!(
        file["registrations"],
        json!([{ "agentId": agent.to::<u64>(), "agentRegistry": registry }])
    );
    let mut consented: Value = prepared["registration"].clone();
    consented["registrations"] = file["registrations"].clone();
    assert_eq!(file, consented, "the relayer adds only registrations");

    // The same consent again registers nothing more.
    let (status, again) = s.post("/v1/agents", &s.host, consent(&signed)).await;
    assert_eq!(status, 202, "{again}");
    assert_eq!(again["agentId"], done["agentId"]);
    let count = s
        .client
        .view(
            None,
            IDENTITY_REGISTRY,
            IIdentityRegistry::balanceOfCall { owner },
        )
        .await
        .unwrap();
    assert_eq!(count, U256::from(1));
}
