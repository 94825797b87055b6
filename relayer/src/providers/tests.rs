//! Recorded-format deliveries of each provider, signed per its scheme: valid ones are read,
//! and tampered, stale, unsigned, oversized or wrongly signed ones refused before parsing.

use base64::Engine;
use http::{HeaderMap, HeaderValue};

use super::*;

/// 2026-12-02T18:00:00Z, the payloads' time.
const AT: i64 = 1_796_234_400;

fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (name, value) in pairs {
        h.insert(*name, HeaderValue::from_str(value).unwrap());
    }
    h
}

mod e2b {
    use super::*;
    use crate::providers::e2b::{sign, verify};

    const SECRET: &[u8] = b"e2b-host-secret";
    /// A v2 (snake_case) `killed` delivery, with the run's usage.
    const V2_KILLED: &str = r#"{"id":"evt_01J9ZK3M","version":"v2","type":"sandbox.lifecycle.killed","timestamp":"2026-12-02T18:00:00Z","event_category":"lifecycle","event_label":"kill","event_data":{"sandbox_metadata":{"bursar_session":"42"},"execution":{"started_at":"2026-12-02T17:50:00Z","vcpu_count":2,"memory_mb":512,"execution_time":600000}},"sandbox_id":"ixq3b2k9w0","sandbox_execution_id":"exec_7","sandbox_template_id":"base","sandbox_build_id":"b1","sandbox_team_id":"team_1"}"#;
    /// A v1 (camelCase) `paused` delivery, its runtime a fraction.
    const V1_PAUSED: &str = r#"{"version":"v1","id":"evt_01J9ZK4N","type":"sandbox.lifecycle.paused","eventData":{"sandbox_metadata":{"bursar_session":"43"},"execution":{"started_at":"2026-12-02T17:55:00Z","vcpu_count":1,"memory_mb":256,"execution_time":1.5}},"sandboxBuildId":"b2","sandboxExecutionId":"exec_8","sandboxId":"p0d9x8c7","sandboxTeamId":"team_1","sandboxTemplateId":"base","timestamp":"2026-12-02T18:00:00Z"}"#;

    fn delivery(signature: &str) -> HeaderMap {
        headers(&[
            ("e2b-webhook-id", "wh_1"),
            ("e2b-delivery-id", "dl_1"),
            ("e2b-signature-version", "v1"),
            ("e2b-signature", signature),
        ])
    }

    #[test]
    fn v2_killed_is_a_termination_with_usage() {
        let sig = sign(SECRET, V2_KILLED.as_bytes());
        // The scheme itself: unpadded base64 of SHA-256(secret ‖ body), not an HMAC.
        let expected =
            <sha2::Sha256 as sha2::Digest>::digest([SECRET, V2_KILLED.as_bytes()].concat());
        assert_eq!(
            base64::engine::general_purpose::STANDARD_NO_PAD
                .decode(&sig)
                .unwrap(),
            expected.to_vec()
        );
        assert!(!sig.ends_with('='));
        let report = verify(SECRET, &delivery(&sig), V2_KILLED.as_bytes(), AT + 30).unwrap();
        assert_eq!(report.event_id, "evt_01J9ZK3M");
        assert_eq!(report.sandbox_id, "ixq3b2k9w0");
        assert_eq!(report.kind, "sandbox.lifecycle.killed");
        assert_eq!(report.lifecycle, Lifecycle::Terminated);
        assert_eq!(report.at, AT);
        assert_eq!(report.metadata["bursar_session"], "42");
        assert_eq!(
            report.usage,
            Some(Usage {
                run: Some("exec_7".into()),
                started_at: Some("2026-12-02T17:50:00Z".into()),
                vcpus: Some(2),
                memory_mb: Some(512),
                runtime_ms: Some(600_000),
                ..Usage::default()
            })
        );
    }

    #[test]
    fn v1_paused_verifies_in_either_alphabet_and_with_padding() {
        let standard = sign(SECRET, V1_PAUSED.as_bytes());
        let url_safe = standard.replace('+', "-").replace('/', "_");
        assert_ne!(
            standard, url_safe,
            "this body's signature differs between alphabets"
        );
        for sig in [standard.clone(), url_safe, format!("{standard}=")] {
            let report = verify(SECRET, &delivery(&sig), V1_PAUSED.as_bytes(), AT).unwrap();
            assert_eq!(report.sandbox_id, "p0d9x8c7");
            assert_eq!(report.event_id, "evt_01J9ZK4N");
            assert_eq!(report.lifecycle, Lifecycle::Paused);
            assert_eq!(report.metadata["bursar_session"], "43");
            assert_eq!(report.usage.unwrap().runtime_ms, Some(2), "1.5 rounds to 2");
        }
    }

    #[test]
    fn every_event_type_has_its_meaning() {
        for (kind, lifecycle) in [
            ("created", Lifecycle::Created),
            ("paused", Lifecycle::Paused),
            ("resumed", Lifecycle::Resumed),
            ("killed", Lifecycle::Terminated),
            ("updated", Lifecycle::Other),
            ("checkpointed", Lifecycle::Other),
        ] {
            let body = V2_KILLED.replace(
                "sandbox.lifecycle.killed",
                &format!("sandbox.lifecycle.{kind}"),
            );
            let report = verify(
                SECRET,
                &delivery(&sign(SECRET, body.as_bytes())),
                body.as_bytes(),
                AT,
            )
            .unwrap();
            assert_eq!(report.lifecycle, lifecycle, "{kind}");
        }
    }

    #[test]
    fn forged_stale_and_malformed_deliveries_are_refused() {
        let body = V2_KILLED.as_bytes();
        let sig = sign(SECRET, body);
        let tampered = V2_KILLED.replace("ixq3b2k9w0", "ixq3b2k9w1");
        assert_eq!(
            verify(SECRET, &delivery(&sig), tampered.as_bytes(), AT),
            Err(ProviderError::BadSignature)
        );
        assert_eq!(
            verify(b"another host's secret", &delivery(&sig), body, AT),
            Err(ProviderError::BadSignature),
            "a delivery signed for another host"
        );
        // An HMAC under the secret is not E2B's scheme.
        let hmac = crate::kernel::signing::sign(SECRET, "", 0, std::str::from_utf8(body).unwrap());
        assert_eq!(
            verify(SECRET, &delivery(&hmac), body, AT),
            Err(ProviderError::BadSignature)
        );
        assert_eq!(
            verify(SECRET, &delivery("not base64 !"), body, AT),
            Err(ProviderError::BadSignature)
        );
        let mut unknown_version = delivery(&sig);
        unknown_version.insert("e2b-signature-version", HeaderValue::from_static("v2"));
        assert_eq!(
            verify(SECRET, &unknown_version, body, AT),
            Err(ProviderError::BadSignature)
        );
        assert_eq!(
            verify(SECRET, &headers(&[("e2b-delivery-id", "dl_1")]), body, AT),
            Err(ProviderError::MissingHeader("e2b-signature"))
        );
        // The signed time is checked: a replay an hour later, or from the future.
        assert_eq!(
            verify(SECRET, &delivery(&sig), body, AT + 301),
            Err(ProviderError::Stale)
        );
        assert_eq!(
            verify(SECRET, &delivery(&sig), body, AT - 301),
            Err(ProviderError::Stale)
        );
        let big = vec![b' '; MAX_BODY + 1];
        assert_eq!(
            verify(SECRET, &delivery(&sign(SECRET, &big)), &big, AT),
            Err(ProviderError::TooLarge)
        );
        for signed in [
            r#"{"id":"x"}"#,
            "[]",
            "not json",
            r#"{"id":"e","type":"sandbox.lifecycle.killed","timestamp":"yesterday","sandbox_id":"s"}"#,
        ] {
            assert!(
                matches!(
                    verify(
                        SECRET,
                        &delivery(&sign(SECRET, signed.as_bytes())),
                        signed.as_bytes(),
                        AT
                    ),
                    Err(ProviderError::Malformed(_))
                ),
                "{signed}"
            );
        }
    }
}

mod daytona {
    use super::*;
    use crate::providers::daytona::verify;

    const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const STOPPED: &str = r#"{"event":"sandbox.state.updated","timestamp":"2026-12-02T18:00:00.000Z","id":"8f2c1e4a-5b6d-4e7f-9a0b-1c2d3e4f5a6b","organizationId":"org-1","oldState":"started","newState":"stopped","updatedAt":"2026-12-02T18:00:00.000Z"}"#;
    const CREATED: &str = r#"{"event":"sandbox.created","timestamp":"2026-12-02T18:00:00.000Z","id":"8f2c1e4a-5b6d-4e7f-9a0b-1c2d3e4f5a6b","organizationId":"org-1","state":"creating","class":"small","createdAt":"2026-12-02T18:00:00.000Z"}"#;

    fn delivery(id: &str, timestamp: i64, body: &str, secret: &str) -> HeaderMap {
        let key = base64::engine::general_purpose::STANDARD
            .decode(secret.strip_prefix("whsec_").unwrap())
            .unwrap();
        let sig = crate::kernel::signing::sign(&key, id, timestamp, body);
        headers(&[
            ("svix-id", id),
            ("svix-timestamp", &timestamp.to_string()),
            ("svix-signature", &sig),
        ])
    }

    #[test]
    fn state_updates_and_creations_are_read() {
        let h = delivery("msg_1", AT, STOPPED, SECRET);
        let report = verify(SECRET, &h, STOPPED.as_bytes(), AT + 10)
            .unwrap()
            .unwrap();
        assert_eq!(report.event_id, "msg_1", "deduplicated on svix-id");
        assert_eq!(report.sandbox_id, "8f2c1e4a-5b6d-4e7f-9a0b-1c2d3e4f5a6b");
        assert_eq!(report.kind, "sandbox.state.updated: started -> stopped");
        assert_eq!(report.lifecycle, Lifecycle::Paused);
        assert_eq!(report.at, AT);
        let h = delivery("msg_2", AT, CREATED, SECRET);
        let report = verify(SECRET, &h, CREATED.as_bytes(), AT).unwrap().unwrap();
        assert_eq!(report.lifecycle, Lifecycle::Created);
        for (state, lifecycle) in [
            ("started", Lifecycle::Running),
            ("archived", Lifecycle::Paused),
            ("destroyed", Lifecycle::Terminated),
            ("error", Lifecycle::Terminated),
            ("build_failed", Lifecycle::Terminated),
            ("starting", Lifecycle::Other),
        ] {
            let body = STOPPED.replace(
                r#""newState":"stopped""#,
                &format!(r#""newState":"{state}""#),
            );
            let h = delivery("msg_3", AT, &body, SECRET);
            let report = verify(SECRET, &h, body.as_bytes(), AT).unwrap().unwrap();
            assert_eq!(report.lifecycle, lifecycle, "{state}");
        }
        // Verified, but not about a sandbox.
        let body =
            r#"{"event":"snapshot.created","timestamp":"2026-12-02T18:00:00.000Z","id":"snap-1"}"#;
        let h = delivery("msg_4", AT, body, SECRET);
        assert_eq!(verify(SECRET, &h, body.as_bytes(), AT), Ok(None));
    }

    #[test]
    fn forged_stale_and_malformed_deliveries_are_refused() {
        let h = delivery("msg_1", AT, STOPPED, SECRET);
        let tampered = STOPPED.replace("stopped", "started");
        assert_eq!(
            verify(SECRET, &h, tampered.as_bytes(), AT),
            Err(ProviderError::BadSignature)
        );
        let other = "whsec_b3RoZXIgaG9zdCdzIHNlY3JldCBrZXk=";
        let theirs = delivery("msg_1", AT, STOPPED, other);
        assert_eq!(
            verify(SECRET, &theirs, STOPPED.as_bytes(), AT),
            Err(ProviderError::BadSignature),
            "a delivery signed for another host"
        );
        // The id is signed: the same signature under another message id is refused.
        let mut moved = h.clone();
        moved.insert("svix-id", HeaderValue::from_static("msg_9"));
        assert_eq!(
            verify(SECRET, &moved, STOPPED.as_bytes(), AT),
            Err(ProviderError::BadSignature)
        );
        assert_eq!(
            verify(SECRET, &h, STOPPED.as_bytes(), AT + 301),
            Err(ProviderError::Stale)
        );
        assert_eq!(
            verify("not-a-whsec", &h, STOPPED.as_bytes(), AT),
            Err(ProviderError::BadSecret)
        );
        let mut unsigned = h.clone();
        unsigned.remove("svix-signature");
        assert_eq!(
            verify(SECRET, &unsigned, STOPPED.as_bytes(), AT),
            Err(ProviderError::MissingHeader("svix-signature"))
        );
        let body = r#"{"event":"sandbox.state.updated","id":"s"}"#;
        let h = delivery("msg_5", AT, body, SECRET);
        assert!(matches!(
            verify(SECRET, &h, body.as_bytes(), AT),
            Err(ProviderError::Malformed(_))
        ));
    }
}

mod vercel {
    use super::*;
    use crate::providers::vercel::{sign, verify};

    const SECRET: &[u8] = b"vercel-webhook-secret";
    /// A stopped session (the envelope of Vercel's webhooks; see the module's assumptions).
    const STOPPED: &str = r#"{"id":"evt_vs_1","type":"sandbox.session.stopped","createdAt":1796234400123,"region":"iad1","payload":{"sandbox":{"name":"agent-7","id":"sbx_9"},"session":{"id":"sess_2","status":"stopped","stopReason":"timeout","duration":300000,"activeCpuDurationMs":41250,"vcpus":2,"memory":4096,"networkTransfer":{"ingress":1048576,"egress":65536}}}}"#;

    fn delivery(signature: &str) -> HeaderMap {
        headers(&[("x-vercel-signature", signature)])
    }

    #[test]
    fn a_stopped_session_ends_the_sandbox_with_its_usage() {
        let sig = sign(SECRET, STOPPED.as_bytes());
        assert_eq!(sig.len(), 40, "hex SHA-1");
        let report = verify(SECRET, &delivery(&sig), STOPPED.as_bytes(), AT)
            .unwrap()
            .unwrap();
        assert_eq!(report.event_id, "evt_vs_1");
        assert_eq!(report.sandbox_id, "agent-7", "the sandbox, not its session");
        assert_eq!(report.kind, "sandbox.session.stopped: timeout");
        assert_eq!(report.lifecycle, Lifecycle::Terminated);
        assert_eq!(report.at, AT);
        assert_eq!(
            report.usage,
            Some(Usage {
                run: Some("sess_2".into()),
                vcpus: Some(2),
                memory_mb: Some(4096),
                runtime_ms: Some(300_000),
                active_cpu_ms: Some(41_250),
                ingress_bytes: Some(1_048_576),
                egress_bytes: Some(65_536),
                ..Usage::default()
            })
        );
        for (event, reason, lifecycle) in [
            ("stopped", "snapshot", Lifecycle::Paused),
            ("stopped", "error", Lifecycle::Terminated),
            ("started", "timeout", Lifecycle::Running),
            ("expiring", "timeout", Lifecycle::Other),
        ] {
            let body = STOPPED
                .replace(
                    "sandbox.session.stopped",
                    &format!("sandbox.session.{event}"),
                )
                .replace(
                    r#""stopReason":"timeout""#,
                    &format!(r#""stopReason":"{reason}""#),
                );
            let sig = sign(SECRET, body.as_bytes());
            let report = verify(SECRET, &delivery(&sig), body.as_bytes(), AT)
                .unwrap()
                .unwrap();
            assert_eq!(report.lifecycle, lifecycle, "{event} {reason}");
            assert_eq!(report.usage.is_some(), event == "stopped");
        }
        let body =
            r#"{"id":"evt_d","type":"deployment.created","createdAt":1796234400000,"payload":{}}"#;
        let sig = sign(SECRET, body.as_bytes());
        assert_eq!(
            verify(SECRET, &delivery(&sig), body.as_bytes(), AT),
            Ok(None)
        );
    }

    #[test]
    fn forged_stale_and_malformed_deliveries_are_refused() {
        let body = STOPPED.as_bytes();
        let sig = sign(SECRET, body);
        let tampered = STOPPED.replace("agent-7", "agent-8");
        assert_eq!(
            verify(SECRET, &delivery(&sig), tampered.as_bytes(), AT),
            Err(ProviderError::BadSignature)
        );
        assert_eq!(
            verify(b"another host", &delivery(&sig), body, AT),
            Err(ProviderError::BadSignature)
        );
        assert_eq!(
            verify(SECRET, &delivery("zz"), body, AT),
            Err(ProviderError::BadSignature)
        );
        assert_eq!(
            verify(SECRET, &HeaderMap::new(), body, AT),
            Err(ProviderError::MissingHeader("x-vercel-signature"))
        );
        assert_eq!(
            verify(SECRET, &delivery(&sig), body, AT + 400),
            Err(ProviderError::Stale)
        );
        let body = r#"{"id":"evt","type":"sandbox.session.stopped","createdAt":1796234400000}"#;
        let sig = sign(SECRET, body.as_bytes());
        assert!(matches!(
            verify(SECRET, &delivery(&sig), body.as_bytes(), AT),
            Err(ProviderError::Malformed(_))
        ));
    }
}
