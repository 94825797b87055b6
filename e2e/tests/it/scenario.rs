//! The README's demonstration as a test: a fresh devnet, the deployment, the whole agent
//! session (the scenario checks every event and balance itself and fails on any difference),
//! then the audit trail read back from logs.

use alloy_primitives::U256;
use bursar_demo::audit::{self, AuditEvent};
use bursar_demo::money::usd;
use bursar_demo::{Actors, Contracts, Transcript};
use bursar_e2e::*;

#[tokio::test]
async fn agent_session_end_to_end_with_audit_trail() {
    let (_devnet, client) = devnet().await;
    let record = deploy(&client, &scratch("scenario")).await;
    let mut transcript = Transcript::default();
    let actors = Actors::fresh(dev_key(0), "e2e");
    let owner = actors.owner.address();
    let report = bursar_demo::run(&client, &record, actors, &mut transcript)
        .await
        .unwrap_or_else(|e| panic!("scenario: {e}\n{}", transcript.0.join("\n")));

    // The session is named after its owner and the nonce the relayer chose.
    assert_ne!(report.session_id, U256::ZERO);
    let _ = owner;
    assert_eq!(report.receipt_ids.len(), 5);
    assert_eq!(report.provenance_ids.len(), 2);
    let half = U256::from(500_000);
    assert_eq!(
        (report.spent, report.refund),
        (usd(66) + half, usd(34) - half)
    );
    // Both refusals were narrated with the custom error the wallet reverted with.
    let text = transcript.0.join("\n");
    assert!(text.contains("WalletCounterpartyNotAllowed"), "{text}");
    assert!(text.contains("WalletPeriodBudgetExceeded"), "{text}");
    assert!(text.contains("WalletSessionRevoked"), "{text}");
    // Through the relayer: the host's webhooks came back verified.
    assert!(text.contains("webhook session.closed"), "{text}");
    // Two agents got passports; the desk sold the research agent a dataset, and each side's
    // rating for that receipt counts on chain.
    assert!(report.agents.is_some(), "{text}");
    assert!(report.purchase_receipt.is_some(), "{text}");
    assert!(
        text.contains("getSummary over the ReceiptRegistry counts 1 each"),
        "{text}"
    );

    // The trail, from logs alone, tells the same story in chain order.
    let contracts = Contracts::from_record(&record).unwrap();
    let trail = audit::trail(&client, &contracts, report.session_id, report.first_block)
        .await
        .unwrap();
    let names: Vec<String> = trail
        .iter()
        .filter(|e| !matches!(e.event, AuditEvent::Token(_)))
        .map(|e| e.event.name())
        .collect();
    assert_eq!(
        names,
        [
            "ListCreated",
            "EntrySet",
            "EntrySet",
            "SessionOpened",
            "ReceiptRecorded",
            "PaymentExecuted",
            "ReceiptRecorded",
            "PaymentExecuted",
            "ReceiptRecorded",
            "PaymentExecuted",
            "LeaseRenewed",
            "PaymentPending",
            "PaymentApproved",
            "ReceiptRecorded",
            "PaymentExecuted",
            "ReceiptAcknowledged",
            // The dataset bought from the desk; the report derived from it (the dataset's
            // record is the desk's session's); both sides' ratings of the sale.
            "ReceiptRecorded",
            "PaymentExecuted",
            "ProvenanceRecorded",
            "ReceiptFeedbackGiven",
            "ReceiptFeedbackGiven",
            "SessionRevoked",
            "SessionClosed",
        ]
    );
    // Money moved exactly seven times: deposit in, five payments, refund out.
    let transfers = trail
        .iter()
        .filter(|e| e.event.name() == "Transfer")
        .count();
    assert_eq!(transfers, 7);
    let ordered = trail
        .windows(2)
        .all(|w| (w[0].block, w[0].log_index) < (w[1].block, w[1].log_index));
    assert!(ordered, "trail in chain order");
    // Every line renders.
    assert!(trail.iter().all(|e| !e.to_string().is_empty()));
}
