// The ns-3 side of bench/sim.sh's TCP dumbbell: FLOWS senders on point-to-point links of RATE
// into a left router, a RATE bottleneck to a right router with a drop-tail device queue of QUEUE
// packets, and FLOWS receivers behind it; every link has DELAY of propagation. Each sender runs
// one bulk TCP transfer (BulkSend, NewReno with SACK, MSS bytes, 4 MiB socket buffers, delayed
// ACKs every second segment) to its own receiver for TIME seconds: weft's `tput` workload with
// `stack = "linux"`, `cc = "newreno"` on the same topology (crates/weft-sim/examples/tcpbench.rs).
// Prints TCP segments put on the wire by all hosts (data and ACKs, counted at the IP layer),
// payload bytes received, ns-3 events, and the CPU and wall-clock seconds of Simulator::Run.
#include <chrono>
#include <cstdio>
#include <ctime>

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

using namespace ns3;

static uint64_t g_segments = 0;
static void Tx(const Ipv4Header&, Ptr<const Packet>, uint32_t) { g_segments++; }

int main(int argc, char* argv[]) {
  uint32_t flows = 16;
  std::string rate = "1Gbps";
  std::string delay = "50us";
  uint32_t queue = 100;
  uint32_t mss = 1460;
  double time = 10.0;
  CommandLine cmd;
  cmd.AddValue("flows", "TCP flows (senders, and as many receivers)", flows);
  cmd.AddValue("rate", "rate of every link", rate);
  cmd.AddValue("delay", "propagation delay of every link", delay);
  cmd.AddValue("queue", "bottleneck queue, packets", queue);
  cmd.AddValue("mss", "TCP segment size, bytes", mss);
  cmd.AddValue("time", "simulated seconds", time);
  cmd.Parse(argc, argv);

  Config::SetDefault("ns3::TcpL4Protocol::SocketType", StringValue("ns3::TcpNewReno"));
  Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(mss));
  Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(4 << 20));
  Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(4 << 20));
  Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(2));
  Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(true));

  NodeContainer left, right;
  left.Create(flows);
  right.Create(flows);
  Ptr<Node> r1 = CreateObject<Node>();
  Ptr<Node> r2 = CreateObject<Node>();
  InternetStackHelper stack;
  stack.Install(left);
  stack.Install(right);
  stack.Install(r1);
  stack.Install(r2);

  PointToPointHelper p2p;
  p2p.SetDeviceAttribute("DataRate", StringValue(rate));
  p2p.SetChannelAttribute("Delay", StringValue(delay));
  p2p.SetQueue("ns3::DropTailQueue", "MaxSize", StringValue(std::to_string(queue) + "p"));
  Ipv4AddressHelper addr;
  TrafficControlHelper tch;
  std::vector<Ipv4Address> sinks;
  for (uint32_t i = 0; i < flows; i++) {
    char net[32];
    NetDeviceContainer a = p2p.Install(left.Get(i), r1);
    std::snprintf(net, sizeof net, "10.1.%u.0", i);
    addr.SetBase(net, "255.255.255.0");
    addr.Assign(a);
    NetDeviceContainer b = p2p.Install(r2, right.Get(i));
    std::snprintf(net, sizeof net, "10.2.%u.0", i);
    addr.SetBase(net, "255.255.255.0");
    sinks.push_back(addr.Assign(b).GetAddress(1));
  }
  NetDeviceContainer bottleneck = p2p.Install(r1, r2);
  addr.SetBase("10.200.0.0", "255.255.255.0");
  addr.Assign(bottleneck);
  // Only the device's drop-tail queue: no queue disc in front of it (Assign installed one).
  tch.Uninstall(bottleneck.Get(0));
  Ipv4GlobalRoutingHelper::PopulateRoutingTables();

  for (uint32_t i = 0; i < flows; i++) {
    PacketSinkHelper sink("ns3::TcpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), 5001));
    ApplicationContainer s = sink.Install(right.Get(i));
    s.Start(Seconds(0));
    BulkSendHelper bulk("ns3::TcpSocketFactory", InetSocketAddress(sinks[i], 5001));
    bulk.SetAttribute("MaxBytes", UintegerValue(0));
    bulk.SetAttribute("SendSize", UintegerValue(8192));
    ApplicationContainer a = bulk.Install(left.Get(i));
    a.Start(Seconds(0.0));
    a.Stop(Seconds(time));
  }
  // Every IPv4 packet a TCP host sends: the segments (data, ACKs, SYNs, FINs) of both ends.
  for (uint32_t i = 0; i < flows; i++) {
    left.Get(i)->GetObject<Ipv4L3Protocol>()->TraceConnectWithoutContext("SendOutgoing",
                                                                         MakeCallback(&Tx));
    right.Get(i)->GetObject<Ipv4L3Protocol>()->TraceConnectWithoutContext("SendOutgoing",
                                                                          MakeCallback(&Tx));
  }
  Simulator::Stop(Seconds(time));
  auto t0 = std::chrono::steady_clock::now();
  std::clock_t c0 = std::clock();
  Simulator::Run();
  double cpu = double(std::clock() - c0) / CLOCKS_PER_SEC;
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  uint64_t rx = 0;
  for (uint32_t i = 0; i < flows; i++) {
    Ptr<Application> app = right.Get(i)->GetApplication(0);
    rx += DynamicCast<PacketSink>(app)->GetTotalRx();
  }
  std::printf("ns3 segments=%llu payload_bytes=%llu goodput_mbps=%.2f events=%llu cpu_s=%.6f wall_s=%.6f\n",
              (unsigned long long)g_segments, (unsigned long long)rx, rx * 8.0 / time / 1e6,
              (unsigned long long)Simulator::GetEventCount(), cpu, wall);
  Simulator::Destroy();
  return 0;
}
