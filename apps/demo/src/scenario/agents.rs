//! The agents' part of the story: two owners' agents get ERC-8004 passports through the
//! relayer; vendor A's data desk sells a dataset it made behind HTTP 402 and the research agent
//! buys it from its session with `fetch`; each rates the other for that sale's receipt, and
//! only such paid-for ratings count in `getSummary(agent, [ReceiptRegistry])`.

use std::time::Duration;

use alloy_primitives::U256;
use alloy_sol_types::SolStruct;
use bursar_agent::fetch::{self, Options, Request};
use bursar_agent::relayer::Relayer;
use bursar_agent::sell::Listing;
use bursar_bindings::eip712::{ReceiptFeedback, RECEIPT_REGISTRY_DOMAIN};
use bursar_bindings::erc8004::{
    agent_wallet_set_digest, IIdentityRegistry, IReputationRegistry, IDENTITY_REGISTRY,
    REPUTATION_REGISTRY,
};
use bursar_bindings::receipts::{give_receipt_feedback, IReceiptRegistry};
use bursar_bindings::wallet::ISessionWallet;
use bursar_client::Key;
use serde_json::json;

use super::{text, Narrator, Passports, Purchase, Scenario, DATASET_PRICE as PRICE};
use crate::error::{Result, ScenarioError};
use crate::money::usd;

/// What the data desk sells.
const DATASET: &[u8] = b"vendor,price\nmodel-api,0.012\ngpu-cloud,2.10\n";

impl<N: Narrator> Scenario<'_, N> {
    pub(super) async fn passports(&mut self) -> Result<()> {
        self.narrator.step(
            "Two owners get their agents ERC-8004 passports through the relayer, gasless: vendor A's data desk and the owner's research agent",
        );
        let vendor = self.actors.vendor_a.clone();
        let desk = self
            .register_agent(
                &vendor,
                json!({
                    "name": "Vendor A data desk",
                    "description": "Datasets of model and GPU prices, sold over x402",
                    "services": [{ "name": "web", "endpoint": "https://vendor-a.example" }],
                }),
            )
            .await?;
        self.set_agent_wallet(&vendor, desk).await?;
        let owner = self.actors.owner.clone();
        let mcp = format!("{}/mcp", self.api().0.base());
        let research = self
            .register_agent(
                &owner,
                json!({
                    "name": "Research agent",
                    "description": "Market research in an E2B sandbox",
                    "services": [{ "name": "MCP", "endpoint": mcp }],
                }),
            )
            .await?;
        self.report.agents = Some(Passports { desk, research });
        Ok(())
    }

    /// `owner`'s agent described by `agent`, registered through the relayer (the owner signs
    /// its consent; the relayer's signer registers and hands the token over): its id.
    async fn register_agent(&mut self, owner: &Key, mut agent: serde_json::Value) -> Result<U256> {
        let name = text(&agent["name"])?;
        agent["owner"] = json!(owner.address());
        let (api, key) = self.api();
        let prepared = self.expect(201, api.post("/v1/agents/prepare", &key, agent).await?)?;
        let consent = json!({
            "agentRef": prepared["agentRef"],
            "ownerSignature": crate::host::wallet_sign(owner, &prepared["typedData"])?,
        });
        self.expect(202, api.post("/v1/agents", &key, consent).await?)?;
        let path = format!("/v1/agents/{}?wait=30", text(&prepared["agentRef"])?);
        let registered = self.expect(200, api.get(&path, &key).await?)?;
        self.check(
            registered["status"] == "registered",
            "the relayer registered the agent and handed it over",
        )?;
        let id: U256 = text(&registered["agentId"])?
            .parse()
            .map_err(|_| ScenarioError::Check(format!("agentId: {registered}")))?;
        let holder = self
            .view(
                IDENTITY_REGISTRY,
                IIdentityRegistry::ownerOfCall { tokenId: id },
            )
            .await?;
        self.check(holder == owner.address(), "its owner holds the agent")?;
        self.narrator.note(&format!(
            "agent #{id} {name:?} held by {holder}, its file at {}",
            text(&registered["registrationUrl"])?
        ));
        Ok(id)
    }

    /// `owner` makes its own address agent `agent`'s wallet (`setAgentWallet`, the new
    /// wallet's EIP-712 consent): where the agent is paid. The hand-over cleared the one the
    /// registry set for the relayer's signer.
    async fn set_agent_wallet(&mut self, owner: &Key, agent: U256) -> Result<()> {
        let chain_id = self.client.chain_id().await?;
        let now = self.client.latest_block().await?.timestamp.to::<u64>();
        let deadline = U256::from(now + 60);
        let wallet = owner.address();
        let digest = agent_wallet_set_digest(
            (chain_id, IDENTITY_REGISTRY),
            agent,
            wallet,
            owner.address(),
            deadline,
        );
        let set = IIdentityRegistry::setAgentWalletCall {
            agentId: agent,
            newWallet: wallet,
            deadline,
            signature: owner.sign_hash_rsv(&digest).into(),
        };
        self.send(owner, IDENTITY_REGISTRY, "setAgentWallet", set)
            .await?;
        let now_set = self
            .view(
                IDENTITY_REGISTRY,
                IIdentityRegistry::getAgentWalletCall { agentId: agent },
            )
            .await?;
        self.check(
            now_set == wallet,
            "the agent's wallet is its owner's address",
        )?;
        self.narrator.note(&format!(
            "agent #{agent} is paid at {wallet}: its owner consented and set it"
        ));
        Ok(())
    }

    fn agents(&self) -> Result<Passports> {
        self.report
            .agents
            .ok_or_else(|| ScenarioError::Check("the agents have no passports".into()))
    }

    pub(super) async fn sale(&mut self) -> Result<()> {
        self.narrator.step(
            "Vendor A's data desk sells a dataset it made behind HTTP 402; the research agent buys it with fetch, from its session",
        );
        let agents = self.agents()?;
        // The desk's own session, which vendor A opens for it with 1.00 of what it earned.
        let vendor = self.actors.vendor_a.clone();
        let desk = self
            .open_for(&vendor, Some(agents.desk), usd(1), "sbx_d35k")
            .await?;
        self.narrator.note(&format!(
            "vendor A opened session {} for agent #{}: 1.00 deposit",
            crate::audit::session_label(desk.event.sessionId),
            agents.desk
        ));
        let seller = (desk.token.clone(), desk.session_key);
        let dataset = self
            .record_provenance(
                &seller,
                "dataset.csv",
                "s3://vendor-a/dataset.csv",
                vec![],
                None,
            )
            .await?;
        self.report.provenance_ids.push(dataset);

        let base = self.api().0.base().to_owned();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|e| ScenarioError::Check(format!("cannot listen: {e}")))?;
        let url = format!(
            "http://{}/dataset.csv",
            listener
                .local_addr()
                .map_err(|e| ScenarioError::Check(e.to_string()))?
        );
        let listing = Listing::offer(
            &Relayer::new(&base, &desk.token),
            &url,
            U256::from(PRICE),
            Some("model and GPU prices"),
            (DATASET.to_vec(), "text/csv"),
        )
        .await
        .map_err(|e| ScenarioError::Check(format!("the relayer wrote no offer: {e}")))?;
        let vendor_address = vendor.address().to_checksum(None);
        self.check(
            listing.seller() == (agents.desk.to_string(), vendor_address),
            "the offer is paid at the desk's agentWallet and names the desk",
        )?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(listing.serve(listener, async {
            let _ = stopped.await;
        }));
        let request = Request {
            method: reqwest::Method::GET,
            url: url.clone(),
            headers: Vec::new(),
            body: None,
        };
        let options = Options {
            max: Some(usd(1)),
            // The seller runs on this machine.
            policy: bursar_egress::Policy {
                allow_loopback: true,
            },
            timeout: Duration::from_secs(30),
            max_body: None,
            agent: Some(agents.desk),
        };
        let bought =
            fetch::fetch(&Relayer::new(&base, &self.token), None, &request, &options).await;
        let _ = stop.send(());
        let _ = server.await;
        let bought = bought.map_err(|e| ScenarioError::Check(format!("the purchase: {e}")))?;
        self.check(
            bought.status == 200 && bought.body == DATASET,
            "the desk served the dataset once paid",
        )?;
        let settled = bought
            .settlement
            .ok_or_else(|| ScenarioError::Check("no PAYMENT-RESPONSE".into()))?;
        let r = self.mined(&settled["transaction"]).await?;
        let executed = self.event::<ISessionWallet::PaymentExecuted>(&r, self.contracts.wallet)?;
        let receipt =
            self.event::<IReceiptRegistry::ReceiptRecorded>(&r, self.contracts.receipts)?;
        self.check(
            executed.sessionId == self.report.session_id
                && executed.to == vendor.address()
                && executed.amount == U256::from(PRICE)
                && receipt.receiptId == executed.receiptId,
            "the research session paid 0.50 to the desk's wallet, with a receipt",
        )?;
        // The relayer kept the x402 payment among the session's: the rating names it.
        let (api, token) = (self.api().0, self.token.clone());
        let listed = self.expect(200, api.get("/v1/payments?limit=5", &token).await?)?;
        let payment = listed["payments"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|p| p["receiptId"] == json!(receipt.receiptId.to_string()))
            .ok_or_else(|| ScenarioError::Check(format!("the purchase is not listed: {listed}")))?;
        let payment_id = text(&payment["id"])?;
        let paid = bursar_bindings::receipts::Receipt::from(&receipt);
        self.payment_ids.push(payment_id.clone());
        self.receipts.push(paid.clone());
        self.purchase = Some(Purchase {
            payment_id,
            receipt_id: receipt.receiptId,
            receipt: paid,
        });
        self.report.receipt_ids.push(receipt.receiptId);
        self.report.purchase_receipt = Some(receipt.receiptId);
        self.narrator.note(&format!(
            "dataset record #{dataset} sold at {url} for 0.50 (bursar-session, the relayer as facilitator): receipt #{}, paid to agent #{}'s wallet",
            receipt.receiptId, agents.desk
        ));

        // The desk is done for today: the host ends its session, and vendor A gets the
        // deposit back beside what it earned.
        let (api, key) = self.api();
        let id = bursar_client::ids::session_id_text(desk.event.sessionId);
        let path = format!("/v1/sessions/{id}");
        let revoked = self.expect(
            200,
            api.post(&format!("{path}/revoke"), &key, json!({})).await?,
        )?;
        self.mined(&revoked["transactionHash"]).await?;
        let closed = self.expect(
            202,
            api.post(&format!("{path}/close"), &key, json!({})).await?,
        )?;
        self.check(closed["status"] == "closed", "the desk's session is closed")?;
        self.mined(&closed["transactionHash"]).await?;
        self.expect_balance("vendor A", vendor.address(), usd(30) + U256::from(PRICE))
            .await
    }

    pub(super) async fn ratings(&mut self) -> Result<()> {
        self.narrator.step(
            "Each side rates the other for the sale's receipt; the ReceiptRegistry gives the ERC-8004 feedback",
        );
        let agents = self.agents()?;
        let receipt_id = self
            .report
            .purchase_receipt
            .ok_or_else(|| ScenarioError::Check("nothing was bought".into()))?;
        // The buyer's sandbox rates the desk through the relayer (the session key signs).
        let rating = json!({
            "paymentId": self.payment_ids.last(),
            "agentId": agents.desk.to_string(),
            "value": "4.5",
            "tag1": "quality",
        });
        let (api, token) = (self.api().0, self.token.clone());
        let queued = self.expect(202, api.post("/v1/feedback", &token, rating).await?)?;
        let path = format!("/v1/feedback/{}?wait=30", text(&queued["id"])?);
        let given = self.expect(200, api.get(&path, &token).await?)?;
        self.check(
            given["status"] == "given",
            "the buyer's feedback is on chain",
        )?;

        // The seller, the receipt's payee, rates the buyer's agent with its own key.
        let vendor = self.actors.vendor_a.clone();
        let sale = self
            .receipts
            .last()
            .cloned()
            .ok_or_else(|| ScenarioError::Check("no receipt".into()))?;
        let deadline = U256::from(self.client.latest_block().await?.timestamp.to::<u64>() + 300);
        let signed = ReceiptFeedback {
            receiptId: receipt_id,
            byPayee: true,
            agentId: agents.research,
            value: 5,
            valueDecimals: 0,
            tag1: "payer".into(),
            tag2: String::new(),
            endpoint: String::new(),
            feedbackURI: String::new(),
            deadline,
        };
        let chain_id = self.client.chain_id().await?;
        let domain = RECEIPT_REGISTRY_DOMAIN.at(chain_id, self.contracts.receipts);
        let signature = vendor.sign_hash_rsv(&signed.eip712_signing_hash(&domain));
        let call = give_receipt_feedback(&sale, signed, signature.into());
        let r = self
            .send(
                &vendor,
                self.contracts.receipts,
                "giveReceiptFeedback",
                call,
            )
            .await?;
        let e =
            self.event::<IReceiptRegistry::ReceiptFeedbackGiven>(&r, self.contracts.receipts)?;
        self.check(
            e.receiptId == receipt_id && e.byPayee && e.agentId == agents.research,
            "ReceiptFeedbackGiven by the payee",
        )?;

        for (agent, want, who) in [
            (agents.desk, (1, 45, 1), "the desk: 4.5"),
            (agents.research, (1, 5, 0), "the research agent: 5"),
        ] {
            let summary = self.paid_for_summary(agent).await?;
            self.check(
                summary == want,
                &format!("getSummary(agent, [ReceiptRegistry]) of {who}"),
            )?;
        }
        self.narrator.note(&format!(
            "receipt #{receipt_id} backs both: agent #{} rated 4.5 by its buyer, agent #{} rated 5 by its seller; getSummary over the ReceiptRegistry counts 1 each",
            agents.desk, agents.research
        ));
        Ok(())
    }

    /// `getSummary(agent, [ReceiptRegistry])`: (count, value, decimals).
    async fn paid_for_summary(&self, agent: U256) -> Result<(u64, i128, u8)> {
        let s = self
            .view(
                REPUTATION_REGISTRY,
                IReputationRegistry::getSummaryCall {
                    agentId: agent,
                    clientAddresses: vec![self.contracts.receipts],
                    tag1: String::new(),
                    tag2: String::new(),
                },
            )
            .await?;
        Ok((s.count, s.summaryValue, s.summaryValueDecimals))
    }
}
