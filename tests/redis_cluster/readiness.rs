//! Readiness on a cluster: ping answers while every master does; with a master gone, its
//! subjects are degraded at once, and the store is not ready once the cluster marks it failed.

use crate::common::redis::RedisCluster;
use crate::support::{check, engine, fixed_window_policy, node_of_subject};
use ratewarden::engine::CheckRequest;
use ratewarden::store::Store;
use std::time::{Duration, Instant};

#[tokio::test]
async fn ping_answers_on_the_cluster_and_fails_without_a_master() {
    let mut cluster = RedisCluster::start(3);
    let engine = engine(&cluster, &fixed_window_policy(5, "1m")).await;
    engine.store().ping().await.expect("every master answers");
    assert!(
        check(&engine, CheckRequest::new("pinged", "/x"))
            .await
            .allowed
    );
    // A master gone (no replica to take over): not ready.
    // A user on a master that stays, and one on the master that goes.
    let user_on = |node: bool| {
        (0..)
            .map(|i| format!("after-{i}"))
            .find(|u| (node_of_subject(&cluster, engine.hasher().user(u)) == 1) == node)
            .unwrap()
    };
    let (live, dead) = (user_on(false), user_on(true));
    cluster.nodes[1].kill();
    // At once: the live master's subjects are still decided, the dead one's are degraded.
    assert!(
        !check(&engine, CheckRequest::new(&live, "/x"))
            .await
            .degraded
    );
    assert!(
        engine
            .check(&CheckRequest::new(&dead, "/x"))
            .await
            .unwrap()
            .degraded
    );
    // Once the others mark it failed (cluster-node-timeout is 2 s), the store is not ready...
    let started = Instant::now();
    loop {
        let call = Instant::now();
        let result = engine.store().ping().await;
        assert!(
            call.elapsed() < Duration::from_secs(2),
            "the ping keeps its deadline: {:?}",
            call.elapsed()
        );
        if result.is_err() {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "still ready with a master down"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // ...and rightly so: a cluster that lost slots refuses every command (CLUSTERDOWN).
    assert!(
        engine
            .check(&CheckRequest::new(&live, "/x"))
            .await
            .unwrap()
            .degraded
    );
}
