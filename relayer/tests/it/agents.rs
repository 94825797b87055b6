//! ERC-8004 agents registered for owners through the relayer, on the devnet's registries: the
//! host prepares, the owner consents in its wallet (nothing else), a relayer signer registers
//! and hands the token over, and anyone reads the registration file the relayer serves.
//! Refused: a stranger's signature, another host's agent, a file before its owner consented.
//! Then agents that sell: a session names its agent, the seller's 402 pays the agent's wallet,
//! and a buyer pays no other.

use alloy_primitives::{B256, U256};
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use bursar_bindings::counterparty::ICounterpartyRegistry;
use bursar_bindings::erc8004::{agent_wallet_set_digest, IIdentityRegistry, IDENTITY_REGISTRY};
use bursar_client::Key;
use bursar_deploy::Contract;
use serde_json::{json, Value};

use super::flow::{address_of, code, system, usd, wallet_sign, System};
use super::*;

on_both_databases!(
    an_owner_gets_an_agent_it_consented_to_and_pays_no_gas,
    an_agent_sells_at_its_wallet_and_buyers_pay_no_other,
);

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

/// Registers an agent for `s.owner` through the relayer: its id.
async fn registered(s: &System, name: &str) -> U256 {
    let (status, prepared) = s
        .post(
            "/v1/agents/prepare",
            &s.host,
            json!({ "owner": s.owner.address(), "name": name }),
        )
        .await;
    assert_eq!(status, 201, "{prepared}");
    let consent = json!({
        "agentRef": prepared["agentRef"],
        "ownerSignature": wallet_sign(&s.owner, &prepared["typedData"]),
    });
    let (status, r) = s.post("/v1/agents", &s.host, consent).await;
    assert_eq!(status, 202, "{r}");
    let path = format!("/v1/agents/{}", prepared["agentRef"].as_str().unwrap());
    let done = s
        .get_when(&path, &s.host, |v| {
            v["status"] == "registered" || v["status"] == "failed"
        })
        .await;
    assert_eq!(done["status"], "registered", "{done}");
    done["agentId"].as_str().unwrap().parse().unwrap()
}

/// An agent sells at its `agentWallet` and buyers pay no one else: a session names its agent
/// (only its owner's), the relayer writes the seller's 402 for the agent's wallet, and a
/// buyer's payment is refused when the 402 names the agent but asks to pay another wallet,
/// names another agent than the one meant, or names another chain's registry. Once the agent
/// is transferred, its old owner's sessions sell for it no more and its wallet is cleared.
async fn an_agent_sells_at_its_wallet_and_buyers_pay_no_other(db: Db) {
    let s = system(db).await;
    let desk = registered(&s, "desk").await;
    let held_by_stranger = {
        // Another owner's agent cannot be named by this owner's session.
        let (status, e) = s
            .post(
                "/v1/sessions/prepare",
                &s.host,
                json!({ "owner": dev_key(5).address(), "token": address_of(&s.record, Contract::TestToken), "deposit": "1",
                        "perPaymentCap": "1", "periodBudget": "1", "periodSeconds": 60,
                        "coSignThreshold": "0", "expiresAt": s.chain_now().await + 3_600,
                        "leaseSeconds": 600, "allowlistId": "0", "agentId": desk.to_string() }),
            )
            .await;
        (status, e)
    };
    assert_eq!(held_by_stranger.0, 400, "{}", held_by_stranger.1);
    assert_eq!(held_by_stranger.1["details"]["field"], "agentId");
    let (status, e) = s
        .post(
            "/v1/sessions/prepare",
            &s.host,
            json!({ "owner": s.owner.address(), "token": address_of(&s.record, Contract::TestToken), "deposit": "1",
                    "perPaymentCap": "1", "periodBudget": "1", "periodSeconds": 60,
                    "coSignThreshold": "0", "expiresAt": s.chain_now().await + 3_600,
                    "leaseSeconds": 600, "allowlistId": "0", "agentId": desk.to_string(),
                    "metadata": "also this" }),
        )
        .await;
    assert_eq!(
        (status, e["details"]["field"].as_str()),
        (400, Some("agentId")),
        "{e}"
    );

    // The seller's session runs for the desk; the buyer's for no agent.
    let (seller_id, seller) = s
        .open_session(
            json!({ "agentId": desk.to_string(), "metadata": null, "sandboxId": "sbx-desk",
                     "deposit": usd(1).to_string() }),
        )
        .await;
    let (_, seller_view) = s.get(&format!("/v1/sessions/{seller_id}"), &s.host).await;
    assert_eq!(seller_view["agentId"], desk.to_string(), "{seller_view}");
    let (_, buyer) = s
        .open_session(json!({ "deposit": usd(50).to_string() }))
        .await;
    let token = address_of(&s.record, Contract::TestToken);
    let offer = |token: String| {
        let s = &s;
        async move {
            let asked = json!({ "amount": "250000", "url": "https://desk.example/data.csv" });
            s.post("/v1/x402/offer", &token, asked).await
        }
    };
    let (status, e) = offer(buyer.clone()).await;
    assert_eq!((status, code(&e)), (409, "session_has_no_agent"), "{e}");
    // The hand-over to the owner cleared the wallet the registry set for the relayer.
    let (status, e) = offer(seller.clone()).await;
    assert_eq!((status, code(&e)), (409, "agent_has_no_wallet"), "{e}");

    // The owner makes an account on the buyer's allowlist the desk's wallet, with its consent.
    let wallet = Key::from_bytes(&alloy_primitives::keccak256("the desk's wallet")).unwrap();
    let mut operator = bursar_client::Sender::new(&s.client, dev_key(0))
        .await
        .unwrap();
    let counterparties = address_of(&s.record, Contract::CounterpartyRegistry);
    let allow = ICounterpartyRegistry::setEntriesCall {
        listId: s.list_id,
        counterparties: vec![wallet.address()],
        allowed: vec![true],
        maxPerPayment: vec![U256::ZERO],
        labels: vec![B256::ZERO],
    };
    operator
        .transact(&s.client, counterparties, &allow)
        .await
        .unwrap();
    operator
        .send(
            &s.client,
            Some(s.owner.address()),
            Vec::new(),
            U256::from(10u64).pow(U256::from(17)),
        )
        .await
        .unwrap();
    let deadline = U256::from(s.chain_now().await + 60);
    let digest = agent_wallet_set_digest(
        (412_346, IDENTITY_REGISTRY),
        desk,
        wallet.address(),
        s.owner.address(),
        deadline,
    );
    let set = IIdentityRegistry::setAgentWalletCall {
        agentId: desk,
        newWallet: wallet.address(),
        deadline,
        signature: wallet.sign_hash_rsv(&digest).into(),
    };
    let mut owner = bursar_client::Sender::new(&s.client, s.owner.clone())
        .await
        .unwrap();
    owner
        .transact(&s.client, IDENTITY_REGISTRY, &set)
        .await
        .unwrap();

    let (status, offered) = offer(seller.clone()).await;
    assert_eq!(status, 200, "{offered}");
    let required = offered["paymentRequired"].clone();
    let decoded: Value = serde_json::from_slice(
        &B64.decode(offered["paymentRequiredHeader"].as_str().unwrap())
            .unwrap(),
    )
    .unwrap();
    assert_eq!(decoded, required);
    let schemes: Vec<&str> = required["accepts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["scheme"].as_str().unwrap())
        .collect();
    // The test token has no EIP-3009, so no `exact` (the demo's USDC is offered both ways).
    assert_eq!(schemes, ["bursar-session"]);
    assert!(required["accepts"]
        .as_array()
        .unwrap()
        .iter()
        .all(
            |a| a["payTo"] == wallet.address().to_checksum(None).as_str()
                && a["asset"] == token.to_checksum(None).as_str()
        ));
    let info = &required["extensions"]["erc8004-agent"]["info"];
    assert_eq!(info["agentId"], desk.to_string());
    assert_eq!(
        info["agentRegistry"],
        format!("eip155:412346:{IDENTITY_REGISTRY}")
    );

    // The buyer pays the honest 402, naming the agent it means or not.
    let pay = |required: Value, agent: Option<U256>| {
        let (s, buyer) = (&s, buyer.clone());
        async move {
            let body =
                json!({ "paymentRequired": required, "agentId": agent.map(|a| a.to_string()) });
            s.post("/v1/x402/pay", &buyer, body).await
        }
    };
    let (status, paid) = pay(required.clone(), Some(desk)).await;
    assert_eq!(status, 200, "{paid}");
    assert_eq!(
        paid["paymentPayload"]["accepted"]["payTo"],
        required["accepts"][0]["payTo"]
    );

    // A 402 naming the desk but paying another (allowed) account: refused, nothing signed.
    let mut elsewhere = required.clone();
    for a in elsewhere["accepts"].as_array_mut().unwrap() {
        a["payTo"] = json!(s.vendor_b);
    }
    let (status, e) = pay(elsewhere.clone(), None).await;
    assert_eq!(
        (status, code(&e)),
        (409, "x402_not_the_agents_wallet"),
        "{e}"
    );
    // The same without the extension, when the buyer names the agent it buys from.
    elsewhere["extensions"] = Value::Null;
    let (status, e) = pay(elsewhere.clone(), Some(desk)).await;
    assert_eq!(
        (status, code(&e)),
        (409, "x402_not_the_agents_wallet"),
        "{e}"
    );
    let (status, e) = pay(elsewhere.clone(), Some(U256::from(999))).await;
    assert_eq!(
        (status, e["details"]["field"].as_str()),
        (400, Some("agentId")),
        "{e}"
    );
    let (status, _) = pay(elsewhere, None).await;
    assert_eq!(
        status, 200,
        "a 402 that names no agent is paid as any other"
    );
    // Another agent than the one meant; another chain's registry.
    let (status, e) = pay(required.clone(), Some(desk + U256::from(1))).await;
    assert_eq!((status, code(&e)), (409, "x402_not_the_agent"), "{e}");
    let mut other_chain = required.clone();
    other_chain["extensions"]["erc8004-agent"]["info"]["agentRegistry"] =
        json!(format!("eip155:42161:{IDENTITY_REGISTRY}"));
    let (status, e) = pay(other_chain, None).await;
    assert_eq!(
        (status, code(&e)),
        (409, "x402_unknown_agent_registry"),
        "{e}"
    );

    // The owner transfers the desk away: the registry clears its wallet, so the old 402 is
    // refused, and the old owner's session sells for it no more.
    let transfer = IIdentityRegistry::transferFromCall {
        from: s.owner.address(),
        to: dev_key(5).address(),
        tokenId: desk,
    };
    owner
        .transact(&s.client, IDENTITY_REGISTRY, &transfer)
        .await
        .unwrap();
    let (status, e) = pay(required, None).await;
    assert_eq!(
        (status, code(&e)),
        (409, "x402_not_the_agents_wallet"),
        "{e}"
    );
    let (status, e) = offer(seller).await;
    assert_eq!((status, code(&e)), (409, "agent_not_owned"), "{e}");
}
