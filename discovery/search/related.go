package search

import (
	"slices"
	"strings"
)

// relatedGroups are words that tools and the people looking for them use for
// the same thing. A query word also looks for the other words of its groups,
// at [relatedWeight] (see [Index.Search]). The groups are general tool
// vocabulary, written from what MCP tools do (files, the web, documents,
// code, data, media, finance, maps), not from the names of particular tools;
// the Chinese words are the common translations of the English ones, for the
// servers whose descriptions are written in Chinese.
var relatedGroups = []string{
	// actions
	"fetch get retrieve download grab pull obtain 获取",
	"search find look lookup query locate discover seek 搜索 查询 查找",
	"create make new generate build produce 创建 生成",
	"add insert append put attach 添加 插入",
	"remove delete erase drop forget clear discard 删除",
	"edit modify change update alter revise tweak 修改 编辑 更新",
	"replace substitute swap",
	"read open view show display see 读取 查看",
	"write save store record 保存 写入",
	"list enumerate all 列出 列表",
	"run execute launch start invoke 运行 执行",
	"stop kill terminate end halt abort cancel",
	"convert transform turn export translate 转换",
	"merge combine join concatenate 合并",
	"split divide separate chunk 拆分",
	"compare versus vs comparison 比较",
	"diff difference",
	"move rename relocate 移动 重命名",
	"copy duplicate clone 复制",
	"analyze analyse analysis inspect examine evaluate assess 分析",
	"summary summarize summarise overview brief abstract gist 摘要 总结",
	"check validate verify test 检查 验证",
	"recommend suggest advise recommendation suggestion 推荐",
	"plan schedule organize 计划",
	"extract parse scrape 提取",
	"format beautify prettify indent 格式",
	"compute calculate evaluate math arithmetic 计算",
	"predict forecast estimate 预测",
	"track follow monitor watch 跟踪",
	"click press tap",
	"fill type enter input",

	// things
	"file document doc 文件 文档",
	"folder directory dir 目录 文件夹",
	"picture image photo photograph pic screenshot artwork png jpg jpeg 图片 图像",
	"slide presentation deck ppt pptx powerpoint 幻灯片 演示",
	"word docx document",
	"spreadsheet excel xlsx sheet workbook worksheet tab 表格",
	"table grid",
	"pdf 文档",
	"text content body 文本 内容",
	"note memo notebook jot 笔记",
	"page webpage website site web url link 网页 网站 链接",
	"web internet online 网络 互联网",
	"browser chrome tab",
	"repo repository project codebase 仓库 项目",
	"commit change revision history log 提交",
	"branch fork",
	"code coding programming source script program snippet 代码 编程",
	"package library dependency module lib 依赖 库",
	"version release 版本",
	"vulnerability security cve vuln vulnerable safe 安全 漏洞",
	"component widget element ui 组件",
	"icon symbol 图标",
	"animation animated effect motion 动画",
	"container docker",
	"process program pid task",
	"terminal shell console command cli 终端 命令",
	"log output logs 日志",
	"config configuration setting settings option preference 配置 设置",
	"task todo job item 任务",
	"chart graph plot diagram visualize visualise visualization 图表",
	"map geographic geocode 地图",
	"location place spot venue 地点 位置",
	"route direction navigate navigation directions commute 路线 导航",
	"nearby near around close 附近",
	"weather forecast temperature rain umbrella climate 天气",
	"time clock timezone hour 时间 时区",
	"date day calendar today tomorrow 日期 日历",
	"random chance roll dice shuffle 随机",
	"price cost quote value worth 价格",
	"stock share ticker equity 股票",
	"crypto cryptocurrency bitcoin btc ethereum eth token coin 加密货币",
	"currency money exchange fx forex euro eur dollar usd yen pound 货币 汇率",
	"earnings revenue profit income financial financials 财务 收入",
	"dividend payout 股息",
	"market trading exchange 市场",
	"news headline article story 新闻 资讯",
	"trending popular hot hottest top rank ranking trend viral 热门 热榜 排行",
	"paper article preprint publication study research literature 论文 文章",
	"book novel reading 书 图书",
	"movie film 电影",
	"video clip 视频",
	"song music audio track sound 音乐 音频",
	"transcript subtitle caption captions 字幕",
	"recipe cook cooking meal dish food eat 菜谱 食谱 做法",
	"train railway rail 列车 火车",
	"ticket seat booking 车票 余票",
	"station stop 车站",
	"game match play 游戏 比赛",
	"player user account profile 玩家 用户",
	"card 卡牌",
	"character hero champion agent 角色",
	"question problem puzzle challenge exercise 题目",
	"contest competition tournament 竞赛",
	"dataset data 数据",
	"domain hostname dns",
	"ip address",
	"email mail",
	"http request api endpoint 接口",
	"markdown md",
	"html markup",
	"json",
	"svg vector",
	"mindmap mind outline",
	"thinking reasoning thought think reflect step 思考",
	"memory knowledge remember graph 记忆 知识",
	"wiki encyclopedia wikipedia 百科",
	"trial clinical 临床",
	"gene variant mutation genetic 基因 变异",
	"password protect lock encrypt 密码",
	"footnote endnote note",
	"heading title header 标题",
	"paragraph text 段落",
	"style font formatting 样式 字体",
	"tree hierarchy structure recursive",
	"size big large biggest largest 大小",
	"current now latest newest today recent 当前 最新",
	"history historical past previous 历史",
	"detail details info information 详细 信息",

	// more things people ask tools about
	"translate translation language 翻译 语言",
	"email mail inbox 邮件",
	"message chat conversation 消息",
	"calendar event meeting appointment 日程 会议",
	"company business firm corporation enterprise 公司 企业",
	"database db sql 数据库",
	"upload attach 上传",
	"install setup 安装",
	"deploy deployment publish ship 部署 发布",
	"docs documentation manual reference guide readme 文档 说明",
	"example sample demo usage 示例 例子",
	"tutorial guide howto instructions walkthrough 教程 攻略",
	"review rating opinion feedback 评分 评价 评测",
	"score metric metrics stats statistics 统计 指标",
	"tempo bpm beat rhythm pace fast slow speed 节奏 速度",
	"length duration long seconds 时长",
	"coordinates coordinate latitude longitude lat lon lng gps 经纬度 坐标",
	"city town 城市",
	"country nation 国家",
	"hotel lodging accommodation stay rental listing 住宿 酒店",
	"flight airline airport 航班",
	"restaurant dining cafe 餐厅",
	"school university college education 学校 教育",
	"hospital clinic doctor medical health 医院 医疗 健康",
	"drug medicine medication chemical 药物",
	"disease condition illness 疾病",
	"parking garage 停车",
	"charging charger ev electric 充电",
	"fund etf 基金",
	"sector industry 行业",
	"comment reply discussion thread 评论",
	"post story submission submit 帖子",
	"keyboard key press",
	"hover mouse",
	"selector element css",
	"dropdown select choose pick 选择",
	"login signin sign auth authentication credential 登录",
	"form field input 表单",
	"javascript js script console",
	"screenshot capture snapshot screen 截图",
	"render draw paint sketch 绘制",
	"canvas board drawing 画布",
	"color colour 颜色",
	"rectangle square box shape 形状",
	"theme design style template layout 模板 布局 主题",
	"mockup frame device phone iphone android 手机",
	"row column cell",
	"bullet point",
	"encoding charset utf gbk 编码",
	"compress zip gzip archive 压缩",
	"crawl scrape spider 爬取",
	"whois registrant registrar owner registered registration 注册",
	"timezone zone utc 时区",
	"lunar almanac 农历 黄历",
	"birth birthday born 出生 生日",
	"horoscope fortune astrology zodiac destiny 八字 命理",
	"dinner lunch breakfast supper 晚餐 午餐 早餐",
	"ingredient 食材",
	"allergy allergen 过敏",
	"shopping grocery buy purchase 购物",
	"deal discount sale coupon 优惠",
	"tech technology 科技",
	"startup venture funding investment 创业 投资",
	"finance financial economy economic 财经 经济",
	"entertainment celebrity gossip 娱乐",
	"sport sports 体育",
	"politics political 时政 政治",
	"question answer qa 问答",
	"leaderboard standings ranking ranked 排名 排行榜",
	"league team 联赛 队伍",
	"upcoming fixture schedule 赛程",
	"museum art painting artwork collection gallery 博物馆 艺术",
	"category categories department section topic subject taxonomy 分类 类别",
	"tag label keyword 标签 关键词",
	"government gov federal public 政府",
	"license licence 许可",
	"maintainer author owner 作者",
	"alternative replacement similar substitute 替代",
	"deprecated obsolete outdated 废弃",
	"typescript types typing",
	"changelog 更新日志",
	"stage staged staging",
	"unstage reset undo revert 撤销",
	"checkout switch",
	"status state 状态",
	"legal valid allowed permitted 合法",
	"number integer int digit float 数字",
	"secret token key password hex",
	"uuid id identifier 编号",
	"project workspace notebook 项目",
	"active current default 默认",
	"link relation relationship connection edge connect 关系",
	"entity node object 实体 节点",
	"observation fact facts 事实",
	"chapter part heading section 章节",
	"contents toc outline structure 目录 结构",
	"podcast episode",
	"genome dna 基因组",
	"pubmed medline",
	"stack services multi",

	"props property properties attribute attributes 属性",

	// markets
	"gold silver metal metals precious commodity commodities 黄金",
	"earnings results eps estimate estimates quarterly 财报",
	"insider executive executives director officer 高管",
	"ohlcv candle candles candlestick 行情",
	"sentiment mood fear greed 情绪",

	// weather and climate: what people say when they mean the forecast
	"rainy raining drizzle downpour precipitation rainfall storm thunderstorm 降雨 下雨 暴雨 降水",
	"snow snowy snowfall blizzard frost sleet 下雪 降雪",
	"wind windy gust breeze 风力 风速",
	"cold warm chilly degree celsius fahrenheit 气温 温度",
	"humidity humid muggy dew 湿度",
	"sunny sunshine cloudy overcast fog foggy 晴天 多云 雾",
	"umbrella jacket coat raincoat picnic outdoor weather 天气",
	"uv sunscreen sunburn 紫外线",
	"pollution smog aqi haze pollen 空气 污染 雾霾",
	"alert warning severe hurricane typhoon tornado cyclone 预警 台风",
	"sunrise sunset dawn dusk daylight 日出 日落",
	"earthquake seismic quake tremor 地震",
	"tide tidal surf 潮汐",

	// places, routes and getting around
	"address street postcode postal 地址 邮编",
	"distance far km mile kilometer kilometre 距离 公里",
	"drive driving car walk walking bike bicycle cycling 驾车 步行 骑行",
	"bus subway metro underground tram transit 公交 地铁",
	"railway railroad amtrak 高铁 动车 铁路 火车",
	"reserve reservation fare 预订 订票 票价",
	"timetable departure arrival depart arrive 时刻表 出发 到达",
	"transfer layover stopover 中转 换乘",
	"plane airplane fly flying aviation 机票 飞机 航班",
	"hostel motel inn bnb airbnb resort 民宿 酒店",
	"travel trip vacation tourism tourist itinerary journey 旅行 旅游 行程",
	"attraction sightseeing landmark scenic poi 景点 景区",
	"visa passport customs 签证 护照",
	"rent lease apartment flat housing landlord tenant 租房 房租",
	"car vehicle auto automobile 汽车 车辆",
	"taxi cab uber ride rideshare 打车 出租车",
	"traffic congestion jam 交通 路况",
	"fuel petrol gasoline diesel 加油 油价",
	"elevation altitude terrain mountain 海拔",
	"province region county district prefecture 省份 地区",

	// money: payments, accounts, markets and crypto
	"invoice bill billing receipt payment pay 发票 账单 支付",
	"accounting bookkeeping ledger expense expenses budget 会计 记账 预算",
	"tax taxes vat 税务 纳税",
	"loan mortgage interest apr 贷款 利息 利率",
	"bank banking 银行",
	"inflation cpi gdp unemployment macroeconomic 通胀 宏观",
	"portfolio holding holdings allocation 持仓",
	"futures derivative derivatives 期货",
	"nasdaq nyse dow index indices 指数 大盘 美股 港股",
	"wallet blockchain onchain defi nft 钱包 区块链",
	"solana dogecoin altcoin stablecoin usdt binance 币价",
	"bull bullish bear bearish rally crash 牛市 熊市",
	"salary wage paycheck 工资 薪资",

	// news, social media and video sites
	"tweet twitter retweet 推特",
	"social media 社交 媒体",
	"follower subscriber fan audience 粉丝",
	"reddit subreddit forum community 论坛 社区",
	"weibo douyin tiktok bilibili zhihu xiaohongshu 微博 抖音 知乎 小红书",
	"youtube youtuber channel vlog 频道",
	"influencer creator blogger 博主",
	"hashtag 话题",
	"meme funny joke humor 笑话 段子",
	"breaking headline headlines 头条 快讯",

	// music, audio, video and pictures
	"lyrics lyric verse chorus 歌词",
	"playlist album artist singer band 歌单 专辑 歌手",
	"spotify soundcloud 音乐",
	"chord melody harmony pitch 和弦 旋律",
	"speech voice tts narrate speak 语音 朗读",
	"transcribe transcription dictation asr 转录 语音识别",
	"stream streaming livestream broadcast 直播",
	"resize crop thumbnail scale 裁剪 缩放",
	"filter blur sharpen contrast brightness 滤镜",
	"logo brand branding 标志 商标",
	"illustration cartoon anime comic 插画 动漫 漫画",
	"palette hue gradient 配色 渐变",
	"wallpaper background 壁纸 背景",
	"watermark 水印",
	"ocr recognize recognition 识别 文字识别",
	"gif sticker emoji 表情",

	// design and user interfaces
	"button modal navbar sidebar menu dialog popup 按钮 菜单 弹窗",
	"frontend react vue tailwind 前端",
	"wireframe prototype figma mockup 原型",

	// documents, office, notes and memory
	"resume cv 简历",
	"report essay letter 报告",
	"csv formula pivot 公式",
	"keynote lecture slideshow 演讲 课件 幻灯片",
	"signature esign 签名 签字",
	"print printing printer 打印",
	"highlight annotate annotation 批注 注释",
	"ebook epub kindle 电子书",
	"bookmark favorite favourite starred 收藏",
	"journal diary 日记",
	"reminder remind alarm 提醒 闹钟",
	"notion obsidian evernote onenote 笔记",

	// code, repositories, packages and machines
	"bug error exception crash traceback stacktrace 错误 异常 报错",
	"issue jira tracker 议题",
	"github gitlab bitbucket git",
	"npm pip pypi cargo crate maven",
	"lint linter eslint",
	"unittest pytest jest coverage 测试",
	"debug debugger breakpoint 调试",
	"refactor cleanup 重构",
	"kubernetes kubectl pod cluster helm 集群",
	"cloud aws azure gcp serverless 云端",
	"server host hosting vps",
	"cpu ram disk cores 内存 磁盘",
	"ping latency uptime 延迟",
	"cron scheduled recurring periodic 定时",
	"env environment variable 变量",
	"regex regexp pattern wildcard glob 正则",
	"postgres postgresql mysql sqlite mongodb redis 数据库",
	"schema migration ddl",
	"rest graphql webhook api",
	"hash sha checksum 哈希 校验",
	"decode encode 编码 解码",
	"timestamp epoch unix 时间戳",
	"ssh remote sftp ftp 远程",

	// browsers, web pages and search engines
	"firefox safari playwright puppeteer selenium headless 浏览器",
	"scroll swipe 滚动",
	"visit goto browse surf 浏览 访问",
	"rss feed atom subscribe 订阅",
	"google bing baidu duckduckgo serp 百度 谷歌",

	// mail, chat, meetings and contacts
	"gmail outlook smtp imap newsletter 邮箱",
	"slack discord telegram whatsapp wechat 微信 聊天",
	"zoom webinar conference",
	"contact phonebook 联系人 通讯录",
	"notification notify push 通知",
	"invite invitation rsvp attendee 邀请",
	"availability busy slot 空闲",

	// health, fitness and food
	"symptom sick pain fever cough headache 症状 发烧",
	"calorie nutrition diet carb carbs nutrient 卡路里 营养 热量",
	"fitness workout gym 健身 锻炼",
	"sleep insomnia 睡眠",
	"weight bmi obesity 体重",
	"pregnancy pregnant baby infant 怀孕 婴儿",
	"mental anxiety depression stress therapy 心理 焦虑",
	"vegan vegetarian gluten keto 素食",
	"wine beer cocktail drink beverage 饮料 饮品",
	"bake baking cake bread dessert 烘焙 甜点",
	"cuisine dishes delicacy 美食 菜系",

	// sports, games and esports
	"football soccer fifa 足球",
	"basketball nba 篮球",
	"baseball mlb 棒球",
	"tennis wimbledon 网球",
	"nfl quarterback touchdown 橄榄球",
	"hockey nhl 冰球",
	"racing formula motorsport 赛车",
	"scoreboard livescore 比分",
	"athlete roster lineup 球员 运动员 阵容",
	"esports dota valorant 电竞",
	"chess elo 象棋",
	"steam playstation xbox nintendo 游戏机",
	"pokemon pokedex 宝可梦",

	// astrology, divination and Chinese metaphysics
	"bazi pillar pillars 八字 四柱 命盘 生辰",
	"hexagram divination oracle tarot 易经 占卜 卦象",
	"feng shui fengshui geomancy 风水",
	"aries taurus gemini leo virgo libra scorpio sagittarius capricorn aquarius pisces 星座",
	"lucky luck auspicious 运势 吉日 吉凶",
	"wuxing 五行 天干 地支",
	"zodiac 生肖 属相",
	"dream 解梦 梦境",

	// science, maths and papers
	"equation algebra calculus integral 方程 代数 微分",
	"matrix determinant eigenvalue 矩阵",
	"prime factorial fibonacci 质数",
	"mean median average variance deviation 平均 方差",
	"unit metric imperial 单位 换算",
	"science scientific physics chemistry biology 科学 物理 化学 生物",
	"atom atomic molecule molecular compound 分子 原子",
	"citation cite doi scholar bibliography 引用 文献",
	"astronomy nasa planet galaxy asteroid telescope 天文 行星",
	"arxiv preprint 预印本",

	// learning and coding puzzles
	"exam quiz 考试 测验",
	"course lesson curriculum 课程",
	"learn learning study tutor teach 学习 教学",
	"homework assignment 作业",
	"leetcode codeforces kata 刷题 算法题",
	"flashcard vocabulary vocab memorize 单词 词汇",

	// languages and words
	"dictionary define definition meaning 词典 释义",
	"synonym antonym thesaurus 同义词",
	"grammar spelling proofread spellcheck 语法 拼写",
	"pinyin romanization 拼音",
	"english 英语 英文",
	"chinese mandarin 中文 汉语",
	"japanese 日语 日文",
	"korean 韩语",
	"french 法语",
	"german 德语",
	"spanish 西班牙语",

	// time and dates
	"countdown timer stopwatch 倒计时 计时",
	"holiday festival 节日 假期",
	"weekday weekend 星期 周末",
	"deadline due 截止",

	// shopping and jobs
	"product goods merchandise sku 商品 产品",
	"amazon ebay taobao shop store 淘宝 京东 店铺",
	"cart basket 购物车",
	"order orders 订单",
	"shipping delivery parcel courier 快递 物流",
	"cheap cheapest affordable bargain 便宜",
	"career hiring vacancy employment recruit recruiting recruitment 招聘 职位",
	"linkedin interview candidate applicant 面试",

	// security
	"malware virus phishing scam fraud 恶意 病毒 钓鱼 诈骗",
	"scan scanner nmap 扫描",
	"ssl tls certificate https 证书",
	"breach leak leaked pwned 泄露",
	"firewall intrusion exploit pentest 防火墙 渗透",

	// charts, diagrams and drawings of structure
	"mermaid flowchart uml gantt sequence 流程图",
	"pie histogram scatter heatmap 饼图 柱状图 折线图 散点图",
	"dashboard 仪表盘 看板",
	"orgchart org hierarchy 组织",

	// 3D and CAD
	"mesh stl blender cad modeling modelling 建模 三维",

	// law and government
	"law lawyer attorney statute regulation lawsuit court 法律 律师 法规",
	"contract agreement nda 合同 协议",
	"patent trademark copyright 专利 版权",
	"census population demographic demographics 人口 普查",
	"election vote voting ballot 选举 投票",
	"congress senate legislation parliament 国会 议会 立法",
	"filing edgar annual 公告 年报",
}

// relatedWeight is how much a related word counts next to a word of the
// query itself.
const relatedWeight = 0.4

// related maps a term to the terms related to it; built from relatedGroups.
var related = buildRelated(relatedGroups)

func buildRelated(groups []string) map[string][]string {
	m := map[string][]string{}
	for _, g := range groups {
		var terms []string
		for _, w := range strings.Fields(g) {
			terms = append(terms, Tokenize(w)...)
		}
		slices.Sort(terms)
		terms = slices.Compact(terms)
		for _, t := range terms {
			for _, u := range terms {
				if u != t {
					m[t] = append(m[t], u)
				}
			}
		}
	}
	for t, us := range m {
		slices.Sort(us)
		m[t] = slices.Compact(us)
	}
	return m
}

// queryTerms returns the terms of query, each with its weight: 1 for the
// query's own terms, relatedWeight for the terms related to them. The
// terms are sorted, so scores add up in the same order every time.
func queryTerms(query string) ([]string, map[string]float64) {
	w := map[string]float64{}
	for _, t := range Tokenize(query) {
		w[t] = 1
	}
	for t := range w {
		if w[t] < 1 {
			continue
		}
		for _, u := range related[t] {
			w[u] = max(w[u], relatedWeight)
		}
	}
	terms := make([]string, 0, len(w))
	for t := range w {
		terms = append(terms, t)
	}
	slices.Sort(terms)
	return terms, w
}
